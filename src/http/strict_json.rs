//! JSON read strictly: an object that names a key twice is refused.
//!
//! serde_json keeps the last of two equal keys, so `{"amount_cents":1,"amount_cents":999}` would
//! be a payment of 999, while a proxy, a WAF or an audit log that reads the first key sees 1. The
//! two readings must not differ, so such a body is a 400 before anything reads it.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The start of the error a duplicate key gives (the extractor answers it with a 400).
pub const DUPLICATE_KEY: &str = "duplicate key `";

/// A JSON value in which no object names a key twice.
pub struct UniqueKeys(pub Value);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor).map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON has no NaN or infinity, so every parsed float is a Number.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueKeys(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!("{DUPLICATE_KEY}{key}`")));
            }
            let UniqueKeys(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Value, String> {
        serde_json::from_str::<UniqueKeys>(text)
            .map(|v| v.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn keeps_every_value_as_serde_json_does() {
        let text = r#"{"a":1,"b":[true,null,-2,2.5,"x",{"c":{}}],"d":18446744073709551615}"#;
        assert_eq!(parse(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn refuses_a_key_named_twice_at_any_depth() {
        for text in [
            r#"{"amount_cents":1,"amount_cents":999}"#,
            r#"{"a":{"b":1,"b":2}}"#,
            r#"[{"k":1,"k":1}]"#,
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.starts_with(DUPLICATE_KEY), "{text}: {error}");
        }
        assert!(parse(r#"{"a":{"b":1},"b":{"a":2}}"#).is_ok());
    }
}
