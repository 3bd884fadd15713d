//! JSON Schemas for tool inputs and outputs, tidied for strict clients: no `format`
//! keywords on numbers (AJV warns on `uint64`), no `["T", "null"]` type unions (optional
//! fields are simply not required, with no `default: null`).

use std::sync::Arc;

use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde_json::Value;

pub fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = schema_for_input::<T>().unwrap_or_else(|e| panic!("input schema: {e}"));
    tidy(&schema)
}

pub fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    tidy(&schema_for_output::<T>())
}

fn tidy(schema: &JsonObject) -> Arc<JsonObject> {
    let mut value = Value::Object(schema.clone());
    clean(&mut value);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("a schema object stays an object"),
    }
}

fn clean(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if matches!(map.get("type"), Some(Value::String(t)) if t == "integer" || t == "number")
            {
                map.remove("format");
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if let Some(Value::Array(types)) = map.get("type") {
                let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if non_null.len() == 1 {
                    map.insert("type".into(), non_null[0].clone());
                }
            }
            for child in map.values_mut() {
                clean(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        _ => {}
    }
}
