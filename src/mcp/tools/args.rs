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
        let mut arguments = serde_json::Value::Object(context.arguments.take().unwrap_or_default());
        whole_numbers_as_integers(&mut arguments);
        serde_path_to_error::deserialize(arguments)
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

/// The largest integer a JSON number written with a fraction holds exactly (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// Turns every number written with a zero fraction (`2.0`, `1e3`) into that integer, in
/// arrays and objects too: JSON Schema's `integer` is any number without a fractional
/// part, and clients (and the models writing the arguments) send `10.0` for 10. Every
/// numeric argument memdir takes is an integer, so `2.5` still fails, naming its field.
fn whole_numbers_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= EXACT
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_numbers_become_integers_and_fractions_stay() {
        let mut v = json!({"limit": 2.0, "view_range": [1.0, -1.0], "big": 1e3, "half": 2.5,
            "huge": 1e300, "text": "3.0", "int": 7});
        whole_numbers_as_integers(&mut v);
        assert_eq!(
            v,
            json!({"limit": 2, "view_range": [1, -1], "big": 1000, "half": 2.5,
                "huge": 1e300, "text": "3.0", "int": 7})
        );
        assert!(v["limit"].is_i64());
    }
}
