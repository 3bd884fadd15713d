//! JSON text looked at without being built: a line's text without its byte-order mark,
//! the `id` at the head of a line too long to read, and a count of a message's values
//! (a parsed value takes far more memory than its text).

use serde_json::Value;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Most JSON values (each object, array, key, string, number...) one message may hold.
/// A parsed value takes 30–80 bytes however short its text (`0,` is two bytes), so a
/// 16 MiB line of small numbers or empty arrays took 1–1.5 GB to parse; real messages hold
/// tens of values, a 100 KiB memory's content is one.
pub(super) const MAX_VALUES: usize = 100_000;

/// A line without its leading byte-order mark and surrounding white space (a blank line
/// is skipped, as between messages).
pub(crate) fn trim(line: &[u8]) -> &[u8] {
    line.strip_prefix(BOM).unwrap_or(line).trim_ascii()
}

/// The `id` of a JSON-RPC request from the first bytes of its line: a top-level member
/// that comes before the text runs out, echoed as [`EchoId`] does; `null` when the head
/// is not an object's start or the `id` lies past it (after a long `params`, say).
pub(super) fn head_id(head: &[u8]) -> Value {
    let head = trim(head);
    let Some(mut rest) = head.strip_prefix(b"{") else {
        return Value::Null;
    };
    loop {
        let Some((key, after)) = member_key(rest) else {
            return Value::Null;
        };
        rest = after;
        if key == "id" {
            return match first_value::<EchoId>(rest) {
                // A number cut by the end of the head is not the id.
                Some((id, used)) if used < rest.len() => id.0,
                _ => Value::Null,
            };
        }
        let Some(after) = skip_member_value(rest) else {
            return Value::Null;
        };
        rest = after;
    }
}

/// An object member's key and the text after its `:`.
fn member_key(text: &[u8]) -> Option<(String, &[u8])> {
    let (key, used) = first_value::<String>(text)?;
    let rest = text[used..].trim_ascii_start().strip_prefix(b":")?;
    Some((key, rest))
}

/// The text after a member's value and the `,` that follows it.
fn skip_member_value(text: &[u8]) -> Option<&[u8]> {
    let (serde::de::IgnoredAny, used) = first_value(text)?;
    text[used..].trim_ascii_start().strip_prefix(b",")
}

/// The JSON value at the start of `text` (after white space) and the bytes it took.
fn first_value<'de, T: serde::Deserialize<'de>>(text: &'de [u8]) -> Option<(T, usize)> {
    let mut values = serde_json::Deserializer::from_slice(text).into_iter::<T>();
    let value = values.next()?.ok()?;
    Some((value, values.byte_offset()))
}

/// Whether the JSON text holds more than `MAX_VALUES` values, found without building any
/// of them (serde visits each in place). Malformed text is `false`: parsing it again
/// reports that.
pub(super) fn too_many_values(text: &[u8]) -> bool {
    let mut left = MAX_VALUES;
    match serde::de::DeserializeSeed::deserialize(
        ValueBudget(&mut left),
        &mut serde_json::Deserializer::from_slice(text),
    ) {
        Ok(()) => false,
        Err(e) => e.is_data(),
    }
}

/// Visits one JSON value and everything in it, spending one from the budget per value
/// and failing (a data error) when it runs out.
struct ValueBudget<'a>(&'a mut usize);

impl<'de> serde::de::DeserializeSeed<'de> for ValueBudget<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if *self.0 == 0 {
            return Err(serde::de::Error::custom("too many values"));
        }
        *self.0 -= 1;
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueBudget<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ValueBudget(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(ValueBudget(self.0))?.is_some() {
            map.next_value_seed(ValueBudget(self.0))?;
        }
        Ok(())
    }
}

/// A request's `id` to echo: a string or a 64-bit signed integer, else `null`; anything
/// else is skipped over without being built.
pub(super) struct EchoId(pub(super) Value);

impl<'de> serde::Deserialize<'de> for EchoId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EchoIdVisitor)
    }
}

struct EchoIdVisitor;

impl<'de> serde::de::Visitor<'de> for EchoIdVisitor {
    type Value = EchoId;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a request id")
    }
    fn visit_str<E>(self, v: &str) -> Result<EchoId, E> {
        Ok(EchoId(Value::from(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<EchoId, E> {
        Ok(EchoId(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<EchoId, E> {
        Ok(EchoId(i64::try_from(v).map_or(Value::Null, Value::from)))
    }
    fn visit_f64<E>(self, _: f64) -> Result<EchoId, E> {
        Ok(EchoId(Value::Null))
    }
    fn visit_bool<E>(self, _: bool) -> Result<EchoId, E> {
        Ok(EchoId(Value::Null))
    }
    fn visit_unit<E>(self) -> Result<EchoId, E> {
        Ok(EchoId(Value::Null))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<EchoId, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(EchoId(Value::Null))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<EchoId, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(EchoId(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::framing::OVERSIZED_HEAD;
    use super::*;

    #[test]
    fn an_oversized_lines_id_is_read_from_its_head() {
        let long = "x".repeat(OVERSIZED_HEAD);
        for (head, id) in [
            (
                r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"#.to_owned(),
                json!(42),
            ),
            (r#" {"id" : "a\"b", "#.to_owned(), json!("a\"b")),
            (
                r#"{"jsonrpc":"2.0","method":"x","params":{"a":[1,{"id":3}]},"id":"late","#
                    .to_owned(),
                json!("late"),
            ),
            // The id past the head, cut by it, or not a string or integer.
            (format!(r#"{{"params":"{long}"#), Value::Null),
            (r#"{"jsonrpc":"2.0","id":12"#.to_owned(), Value::Null),
            (r#"{"id":1.5,"#.to_owned(), Value::Null),
            (r#"[{"id":1},"#.to_owned(), Value::Null),
            ("not json".to_owned(), Value::Null),
        ] {
            assert_eq!(head_id(head.as_bytes()), id, "{head}");
        }
    }
}
