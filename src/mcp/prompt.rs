//! What the server tells the model: its instructions (the stores, and the memory
//! protocol in the words of the tools offered) and the `memory_protocol` prompt.

use rmcp::ErrorData;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult, Prompt,
    PromptArgument, PromptMessage, Role,
};

use super::server::MemdirServer;

/// The one prompt: the memory protocol.
const PROTOCOL_PROMPT: &str = "memory_protocol";
/// Characters of a prompt's `topic` argument used.
const TOPIC_CHARS: usize = 500;

impl MemdirServer {
    pub(super) fn instructions(&self) -> String {
        let mut s = String::from(
            "memdir is your durable memory: plain files that outlive this conversation. Stores:\n",
        );
        s.push_str(&self.stores_text());
        s.push_str("Memory protocol:\n");
        s.push_str(&self.protocol(None));
        s
    }

    /// The stores, one line each, and how paths name them.
    fn stores_text(&self) -> String {
        let mut s = String::new();
        for store in self.memdir.stores() {
            s.push_str(&format!(
                "- /{} ({}){}\n",
                store.name,
                if store.read_only {
                    "read-only"
                } else {
                    "read-write"
                },
                store
                    .description
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ));
        }
        if self.tools.memory_tools() {
            s.push_str(
                "Paths look like /<store>/folder/topic.md; a path without a leading / is in the first store.\n",
            );
        }
        if self.tools.anthropic() {
            let first = &self.memdir.stores()[0].name;
            s.push_str(&format!(
                "The `memory` tool (commands view, create, str_replace, insert, delete, rename) works on the same files: its /memories is the store /{first}{}.\n",
                if self.memdir.stores().len() > 1 {
                    ", and every other store is /<name>"
                } else {
                    ""
                }
            ));
        }
        s
    }

    /// The memory protocol (check memory first, record progress, keep it organised,
    /// assume interruption) in the words of the tools offered, for a topic if one is given.
    fn protocol(&self, topic: Option<&str>) -> String {
        let mut s = String::new();
        match (self.tools.memory_tools(), topic) {
            (true, Some(t)) => s.push_str(&format!(
                "1. Before starting, check memory: memory_search for {t:?} and its key words, and memory_list to see what exists; read what is relevant.\n"
            )),
            (true, None) => s.push_str(
                "1. Before starting, check memory: memory_search for the task's key words, or memory_list to see what exists.\n",
            ),
            (false, Some(t)) => s.push_str(&format!(
                "1. Before starting, check memory: view /memories to see what exists, then view what is relevant to {t:?}.\n"
            )),
            (false, None) => s.push_str(
                "1. Before starting, check memory: view /memories to see what exists, then view what is relevant.\n",
            ),
        }
        if self.memdir.all_read_only() {
            // Nothing can be written: the protocol must not ask for it.
            s.push_str(
                "2. Every store is read-only: rely on what it holds, but you cannot record, change or delete anything in it; keep your own notes elsewhere.\n\
                 3. Memories are point-in-time observations: check their age, and verify one before relying on it; one marked expired is likely out of date.\n\
                 4. If a memory is wrong or out of date, tell the user rather than working around it.",
            );
            return s;
        }
        s.push_str(&format!(
            "2. Record progress as you go{}: decisions, facts learned, what is done and what is next.\n\
             3. Keep it organised: one topic per file, update rather than duplicate, delete what turned out wrong.\n\
             4. Assume interruption: your context may end at any moment, and what is not in memory is lost.",
            topic.map(|t| format!(" on {t:?}")).unwrap_or_default()
        ));
        if self.tools.memory_tools() {
            s.push_str(
                "\n5. Facts go stale: give a memory that holds only for a while an `expires` date in its frontmatter (e.g. `expires: 2026-06-30`). Search leaves expired memories out (include_expired: true shows them); memory_read and memory_list mark them expired. When you meet one, verify it, then update it with a new `expires` or delete it (memory_delete takes a `reason`). Now and then review what has not changed for long: memory_list with older_than_days 90 and sort `oldest`; keep, update or delete each.",
            );
            s.push_str(
                "\nTo change a memory you read, pass its content_sha256 as expected_sha256 so you never overwrite a change you have not seen.",
            );
        }
        s
    }

    /// The `memory_protocol` prompt, for `topic` if given.
    fn protocol_prompt(&self, topic: Option<&str>) -> String {
        let mut s = String::from(match topic {
            Some(_) => "Use memdir, your durable memory, while you work on this topic. Stores:\n",
            None => "Use memdir, your durable memory, while you work. Stores:\n",
        });
        s.push_str(&self.stores_text());
        s.push_str(&self.protocol(topic));
        s
    }

    /// The one prompt, `memory_protocol`.
    pub(super) fn prompts() -> ListPromptsResult {
        ListPromptsResult::with_all_items(vec![Prompt::new(
            PROTOCOL_PROMPT,
            Some(
                "How to use memory well: check it before starting, record progress as you go, keep it organised, assume interruption. Optionally about one topic.",
            ),
            Some(vec![
                PromptArgument::new("topic")
                    .with_description(
                        "What the work is about, e.g. `the billing migration` (optional).",
                    )
                    .with_required(false),
            ]),
        )])
    }

    /// The `memory_protocol` prompt for a `prompts/get` request.
    pub(super) fn prompt(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != PROTOCOL_PROMPT {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt `{}`: the prompt memdir offers is `{PROTOCOL_PROMPT}`",
                    crate::text::head_chars(&request.name, 100)
                ),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        let topic = match arguments.get("topic") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(t)) if t.trim().is_empty() => None,
            Some(serde_json::Value::String(t)) => {
                Some(crate::text::head_chars(t.trim(), TOPIC_CHARS))
            }
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    "the `topic` argument of `memory_protocol` is text",
                    None,
                ));
            }
        };
        let text = self.protocol_prompt(topic.as_deref());
        let description = match &topic {
            Some(t) => format!("The memory protocol, for {t:?}"),
            None => "The memory protocol".into(),
        };
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(description)
                .into(),
        )
    }
}
