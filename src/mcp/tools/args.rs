//! `Args`, the extractor of a tool's arguments that names the field a type error is about.

use rmcp::ErrorData;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use serde::de::DeserializeOwned;

/// A tool's arguments, parsed so that an error names the field it is about (rmcp's own
/// extractor says only "invalid type: string \"1\", expected i64"). rmcp turns an error
/// with its prefix `failed to deserialize parameters:` into an `isError` tool result,
/// which the model can read and act on.
pub struct Args<T>(pub T);

impl<S, T: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Args<T> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        serde_path_to_error::deserialize(serde_json::Value::Object(arguments))
            .map(Args)
            .map_err(|e| {
                // Both can quote the argument itself (a string given for a number, a
                // field's name): cut, so the answer does not grow with what it answers.
                let field = crate::text::head_chars(&e.path().to_string(), 100);
                let error = crate::text::head_chars(&e.into_inner().to_string(), 400);
                let message = if field.is_empty() || field == "." {
                    error
                } else {
                    format!("`{field}`: {error}")
                };
                ErrorData::invalid_params(
                    format!("failed to deserialize parameters: {message}"),
                    None,
                )
            })
    }
}
