//! One JSON-RPC message from its text, answering every malformed one as JSON-RPC 2.0
//! says (the stdio transport for a line, the HTTP transport for a body):
//!
//! - not JSON (or not UTF-8): `-32700 Parse error`, `id: null`;
//! - JSON that is not a message: `-32600 Invalid request` naming what is wrong, or
//!   `-32602 Invalid params` for a known request shape whose `params` do not parse; with
//!   the request's `id` when it is a string or an integer, `null` otherwise;
//! - nothing for a malformed notification (a `method` and no `id`) or response: JSON-RPC
//!   never answers those, which also keeps two peers from answering each other's errors
//!   forever.

use rmcp::RoleServer;
use rmcp::service::RxJsonRpcMessage;
use serde_json::{Map, Value};

use super::scan::{EchoId, MAX_VALUES, too_many_values};

pub(super) const PARSE_ERROR: i64 = -32700;
pub(super) const INVALID_REQUEST: i64 = -32600;
pub(super) const INVALID_PARAMS: i64 = -32602;

/// Lines at most this long are not counted: they cannot hold enough values to matter.
const COUNT_VALUES_ABOVE: usize = 64 * 1024;

/// The answer to a malformed message: the `id` to echo, the error code and its message.
pub(crate) type Refusal = (Value, i64, String);

/// One line as a message; `Ok(None)` for one to ignore quietly (a malformed notification,
/// or a reply to a request this server never sent); `Err` with the answer otherwise.
pub(crate) fn decode(text: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, Refusal> {
    if text.len() > COUNT_VALUES_ABOVE && too_many_values(text) {
        return Err(too_many(text));
    }
    let shape_error = match serde_json::from_slice(text) {
        Ok(message) => return Ok(Some(message)),
        Err(e) => e,
    };
    let object = object(text)?;
    let method = object.get("method");
    if method.is_none() && (object.contains_key("result") || object.contains_key("error")) {
        tracing::debug!(error = %shape_error, "ignored a malformed response");
        return Ok(None);
    }
    let Some(id) = object.get("id") else {
        if method.is_some_and(Value::is_string) {
            tracing::debug!(error = %shape_error, "ignored a malformed notification");
            return Ok(None);
        }
        return Err((
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: a request needs a string `method` and an `id`".into(),
        ));
    };
    Err(malformed_request(&object, id, &shape_error))
}

/// The answer to a message of more than `MAX_VALUES` values, with its `id` if it has one.
fn too_many(text: &[u8]) -> Refusal {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<EchoId>,
    }
    let id = serde_json::from_slice::<Id>(text)
        .ok()
        .and_then(|m| m.id)
        .map_or(Value::Null, |id| id.0);
    (
        id,
        INVALID_REQUEST,
        format!("Invalid request: a message may hold at most {MAX_VALUES} JSON values"),
    )
}

/// The text as a JSON object, or the answer to text that is not JSON or not an object.
fn object(text: &[u8]) -> Result<Map<String, Value>, Refusal> {
    let value: Value = serde_json::from_slice(text).map_err(|e| {
        (
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: the line is not JSON ({e})"),
        )
    })?;
    match value {
        Value::Object(object) => Ok(object),
        Value::Array(_) => Err((
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: batches are not supported; send one JSON-RPC message per line".into(),
        )),
        _ => Err((
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: a message must be a JSON object".into(),
        )),
    }
}

/// The answer to a request (an object with an `id`) that rmcp could not parse: what is
/// wrong with its envelope, else its `params`.
fn malformed_request(
    object: &Map<String, Value>,
    id: &Value,
    shape_error: &serde_json::Error,
) -> Refusal {
    // Echoed when it is an id at all; rmcp takes strings and 64-bit signed integers.
    let reply_id = if id.is_string() || id.is_i64() || id.is_u64() {
        id.clone()
    } else {
        Value::Null
    };
    let invalid = |why: &str| {
        (
            reply_id.clone(),
            INVALID_REQUEST,
            format!("Invalid request: {why}"),
        )
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("`jsonrpc` must be \"2.0\"");
    }
    if !(id.is_string() || id.is_i64()) {
        return invalid("`id` must be a string or an integer from -2^63 to 2^63-1");
    }
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        return invalid("`method` must be a string");
    };
    // Echoed only in part: an answer does not grow with what it answers.
    let method = crate::text::head_chars(method, 100);
    tracing::debug!(error = %shape_error, method, "params do not parse");
    let hint = if method == "tools/call" {
        "send {\"name\": <tool name>, \"arguments\": {...}}"
    } else {
        "they do not have the shape the MCP specification gives this method"
    };
    (
        reply_id,
        INVALID_PARAMS,
        format!("Invalid params for `{method}`: {hint}"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_message_of_too_many_values_is_refused_with_its_id_if_it_has_one() {
        let many = "0,".repeat(MAX_VALUES);
        let huge_id = format!("[{many}0]");
        for (id, echoed) in [
            ("7", json!(7)),
            ("\"a\"", json!("a")),
            (huge_id.as_str(), Value::Null),
            ("18446744073709551615", Value::Null),
            ("null", Value::Null),
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"x":[{many}0]}}}}"#
            );
            let (got, code, message) = answer(&line);
            assert_eq!((&got, code), (&echoed, INVALID_REQUEST), "{message}");
        }
        // Long, but few values: a 1 MiB string is one.
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"memory_write","arguments":{{"content":"{}"}}}}}}"#,
            "a".repeat(1 << 20)
        );
        assert!(matches!(decode(long.as_bytes()), Ok(Some(_))));
    }

    fn answer(line: &str) -> Refusal {
        match decode(line.as_bytes()) {
            Err(answer) => answer,
            Ok(m) => panic!("{line} decoded: {}", m.is_some()),
        }
    }

    #[test]
    fn malformed_lines_get_the_json_rpc_error_they_call_for() {
        assert_eq!(answer("{\"jsonrpc\":").1, PARSE_ERROR);
        assert_eq!(answer("not json").0, Value::Null);
        let (id, code, _) = answer(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}"#);
        assert_eq!((id, code), (json!(4), INVALID_PARAMS));
        let (id, code, _) = answer(r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#);
        assert_eq!((id, code), (json!("a"), INVALID_REQUEST));
        let (id, code, _) = answer(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
        assert_eq!((id, code), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            answer(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).1,
            INVALID_REQUEST
        );
        assert_eq!(answer("42").1, INVALID_REQUEST);
    }

    #[test]
    fn valid_messages_and_malformed_notifications_are_not_answered() {
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Some(_))
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#),
            Ok(None)
        ));
        // A reply to a request this server never sent.
        assert!(decode(br#"{"jsonrpc":"2.0","id":9,"result":7}"#).is_ok());
    }
}
