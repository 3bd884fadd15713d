//! The one place a library result becomes a tool result, errors included.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

use crate::error::Error;

/// Turns a library result into a tool result: `structuredContent` and text on success;
/// on failure an `isError` result whose text is the error's actionable message. This is
/// the one place errors become tool results.
pub(super) fn answer<T, O: Serialize>(
    result: Result<T, Error>,
    render: impl FnOnce(T) -> (O, String),
) -> Result<CallToolResult, ErrorData> {
    match result {
        Ok(value) => {
            let (out, text) = render(value);
            let structured = serde_json::to_value(out).map_err(|e| {
                ErrorData::internal_error(format!("cannot encode the result: {e}"), None)
            })?;
            let mut result = CallToolResult::structured(structured);
            result.content = vec![ContentBlock::text(text)];
            Ok(result)
        }
        Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(
            e.to_string(),
        )])),
    }
}
