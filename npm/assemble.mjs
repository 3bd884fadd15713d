// Assembles memdir's npm packages from built binaries: `node npm/assemble.mjs --help`.
//
// Two kinds of package, the esbuild/biome way (no download at install time):
// - one per platform, `memdir-<os>-<cpu>`, carrying that platform's binary, with `os`, `cpu`
//   (and `libc`) so npm installs it only where it runs;
// - the launcher, `memdir`, whose optionalDependencies name every platform package at the
//   same version and whose `memdir` command runs the binary that was installed.
// The version is the crate's, read from Cargo.toml, so the packages cannot drift from it.

import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(here);

// npm's name for a platform (process.platform-process.arch) -> what its package declares,
// and the Rust target the release workflow builds for it.
const PLATFORMS = {
    "linux-x64": { os: "linux", cpu: "x64", libc: "glibc", rust: "x86_64-unknown-linux-gnu" },
    "linux-arm64": { os: "linux", cpu: "arm64", libc: "glibc", rust: "aarch64-unknown-linux-gnu" },
    "darwin-x64": { os: "darwin", cpu: "x64", rust: "x86_64-apple-darwin" },
    "darwin-arm64": { os: "darwin", cpu: "arm64", rust: "aarch64-apple-darwin" },
    "win32-x64": { os: "win32", cpu: "x64", rust: "x86_64-pc-windows-msvc" },
};

const USAGE = `usage:
  node npm/assemble.mjs platform <platform> <binary> <out-dir>
      writes <out-dir>/memdir-<platform>/ carrying <binary>
  node npm/assemble.mjs launcher <out-dir>
      writes <out-dir>/memdir/, the launcher package
  node npm/assemble.mjs platforms
      prints each platform and its Rust target, one per line
platforms: ${Object.keys(PLATFORMS).join(", ")}
then \`npm pack\` (or \`npm publish\`) each folder written.`;

function fail(message) {
    process.stderr.write(`assemble: ${message}\n`);
    process.exit(1);
}

function crateVersion() {
    const manifest = readFileSync(path.join(repo, "Cargo.toml"), "utf8");
    // The first `version = "..."` is [package]'s: it comes before any dependency table.
    const match = manifest.match(/^\[package\][^[]*?^version\s*=\s*"([^"]+)"/m);
    if (!match) fail("no [package] version in Cargo.toml");
    return match[1];
}

function writeJson(file, value) {
    writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

// A fresh, empty package folder: what was there before is never packed by mistake.
function freshDir(dir) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(path.join(dir, "bin"), { recursive: true });
}

function platformPackage(platform, binary, outDir) {
    const spec = PLATFORMS[platform];
    if (!spec) fail(`unknown platform \`${platform}\`; one of: ${Object.keys(PLATFORMS).join(", ")}`);
    let size;
    try {
        size = statSync(binary).size;
    } catch (err) {
        fail(`cannot read the binary ${binary}: ${err.message}`);
    }
    const name = `memdir-${platform}`;
    const dir = path.join(outDir, name);
    freshDir(dir);
    const exe = spec.os === "win32" ? "memdir.exe" : "memdir";
    copyFileSync(binary, path.join(dir, "bin", exe));
    chmodSync(path.join(dir, "bin", exe), 0o755);
    const launcher = JSON.parse(readFileSync(path.join(here, "memdir", "package.json"), "utf8"));
    writeJson(path.join(dir, "package.json"), {
        name,
        version: crateVersion(),
        description: `The memdir binary for ${platform} (${spec.rust}); install \`memdir\` instead`,
        license: launcher.license,
        os: [spec.os],
        cpu: [spec.cpu],
        ...(spec.libc ? { libc: [spec.libc] } : {}),
        files: [`bin/${exe}`],
        preferUnplugged: true,
    });
    writeFileSync(
        path.join(dir, "README.md"),
        `# ${name}\n\nThe memdir binary for ${platform}. Install the \`memdir\` package, which picks the right one.\n`,
    );
    console.log(`${dir} (${name}@${crateVersion()}, ${(size / 1048576).toFixed(1)} MiB binary)`);
}

function launcherPackage(outDir) {
    const dir = path.join(outDir, "memdir");
    freshDir(dir);
    const version = crateVersion();
    const template = JSON.parse(readFileSync(path.join(here, "memdir", "package.json"), "utf8"));
    const optionalDependencies = Object.fromEntries(
        Object.keys(PLATFORMS).map((platform) => [`memdir-${platform}`, version]),
    );
    writeJson(path.join(dir, "package.json"), { ...template, version, optionalDependencies });
    copyFileSync(path.join(here, "memdir", "bin", "memdir.js"), path.join(dir, "bin", "memdir.js"));
    chmodSync(path.join(dir, "bin", "memdir.js"), 0o755);
    copyFileSync(path.join(repo, "README.md"), path.join(dir, "README.md"));
    console.log(`${dir} (memdir@${version}, launcher)`);
}

const [command, ...args] = process.argv.slice(2);
if (command === "platform" && args.length === 3) {
    platformPackage(args[0], path.resolve(args[1]), path.resolve(args[2]));
} else if (command === "launcher" && args.length === 1) {
    launcherPackage(path.resolve(args[0]));
} else if (command === "platforms" && args.length === 0) {
    for (const [platform, spec] of Object.entries(PLATFORMS)) console.log(`${platform} ${spec.rust}`);
} else if (command === "--help" || command === "-h") {
    console.log(USAGE);
} else {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
}
