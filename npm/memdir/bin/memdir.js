#!/usr/bin/env node
// The `memdir` command of the npm package: runs the memdir binary of this platform's package.
//
// The binary itself comes in one package per platform (memdir-linux-x64, memdir-darwin-arm64,
// ...), listed as optionalDependencies of this one; npm installs only the one whose `os`,
// `cpu` (and `libc`) match, so nothing is downloaded at run time. This script finds it and
// runs it with the same arguments and the same stdin/stdout/stderr: an MCP client talks to
// the binary directly, and this process only waits and passes its exit status on.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const exe = process.platform === "win32" ? "memdir.exe" : "memdir";
const pkg = `memdir-${process.platform}-${process.arch}`;

let binary;
try {
    binary = require.resolve(`${pkg}/bin/${exe}`);
} catch {
    const supported = require(path.join(__dirname, "..", "package.json")).optionalDependencies;
    process.stderr.write(
        `memdir: no binary for ${process.platform}-${process.arch} was installed ` +
            `(the package ${pkg} is missing).\n` +
            `Packages exist for: ${Object.keys(supported).join(", ")}.\n` +
            "If yours is among them, reinstall without --no-optional / --omit=optional; " +
            "otherwise install with `pipx install memdir` or `cargo install --locked memdir`.\n",
    );
    process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });

// A client that stops the server by signal stops this process: pass it on, so the binary
// does not outlive it.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
}

child.on("error", (err) => {
    process.stderr.write(`memdir: could not start ${binary}: ${err.message}\n`);
    process.exit(1);
});

child.on("exit", (code, signal) => {
    if (signal) {
        // Die of the same signal, so the parent sees what the binary saw.
        process.removeAllListeners(signal);
        process.kill(process.pid, signal);
    } else {
        process.exit(code ?? 1);
    }
});
