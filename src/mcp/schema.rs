//! The JSON schemas of the tools' arguments, as `tools/list` shows them.
//!
//! schemars describes an `Option` field as nullable (`"type": ["string",
//! "null"]`, or `anyOf` with `{"type": "null"}`). Some clients refuse that:
//! Gemini's function declarations take an OpenAPI subset where `type` is
//! one name, and MCP Inspector's `--strict` check warns about it. An
//! optional argument is one the caller leaves out (it is not `required`),
//! so the schemas here never offer `null` at all: one generator, one
//! transform, for every tool.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use rmcp::model::JsonObject;
use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

/// Drops `null` from every schema: from `type` arrays (one type left is
/// written as a string), from `enum`, as an `anyOf` / `oneOf` branch (one
/// branch left takes the place of the list), and as a `default`.
#[derive(Clone, Copy, Debug, Default)]
struct WithoutNull;

impl Transform for WithoutNull {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let one = types.remove(0);
                object.insert("type".into(), one);
            }
        }
        if let Some(Value::Array(values)) = object.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        if object.get("default").is_some_and(Value::is_null) {
            object.remove("default");
        }
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = object.get_mut(key) else {
                continue;
            };
            branches.retain(|b| !only_null(b));
            if branches.len() == 1
                && let Value::Object(one) = branches.remove(0)
            {
                object.remove(key);
                for (k, v) in one {
                    object.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// A schema that allows nothing but `null`.
fn only_null(schema: &Value) -> bool {
    schema.get("type").is_some_and(|t| t == "null")
        || schema.get("const").is_some_and(Value::is_null)
}

/// The schema of a tool's arguments `T`: an object, without its type's
/// own title and description (noise to a model), never offering `null`.
pub(super) fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    static CACHE: LazyLock<RwLock<HashMap<TypeId, Arc<JsonObject>>>> =
        LazyLock::new(RwLock::default);
    let id = TypeId::of::<T>();
    if let Some(found) = CACHE.read().unwrap_or_else(|p| p.into_inner()).get(&id) {
        return Arc::clone(found);
    }
    let generator = SchemaSettings::draft2020_12()
        .with_transform(WithoutNull)
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let Value::Object(mut object) = schema.to_value() else {
        panic!(
            "the schema of {} is not an object",
            std::any::type_name::<T>()
        );
    };
    assert_eq!(
        object.get("type").and_then(Value::as_str),
        Some("object"),
        "MCP wants the arguments of {} as an object",
        std::any::type_name::<T>()
    );
    object.remove("title");
    object.remove("description");
    let object = Arc::new(object);
    CACHE
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id, Arc::clone(&object));
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        name: String,
        note: Option<String>,
        count: Option<u32>,
        nested: Option<Inner>,
        kind: Option<Kind>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        flag: Option<bool>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        One,
        Two,
    }

    #[test]
    fn optional_arguments_are_left_out_never_null() {
        let schema = Value::Object((*input_schema::<Args>()).clone());
        let text = schema.to_string();
        assert!(!text.contains("null"), "{text}");
        assert_eq!(schema["properties"]["note"]["type"], "string", "{text}");
        assert_eq!(schema["properties"]["count"]["type"], "integer", "{text}");
        assert_eq!(schema["required"], serde_json::json!(["name"]), "{text}");
        assert!(schema.get("title").is_none());
    }
}
