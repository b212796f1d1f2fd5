//! Protobuf messages -> the JSON text gamelake's bronze holds for them, in native code.
//!
//! Bronze lands `google.protobuf.Struct`, `Value`, `ListValue` and a recursive message past its
//! depth limit as text: the message's canonical proto3 JSON (proto field names, 64-bit integers
//! as strings, defaults left out) printed as Python's `json.dumps(..., sort_keys=True)` prints
//! it. The Python renderer (ingest/landing/proto_arrow.py) is the reference; this one gives the
//! same text byte for byte, a few times faster (tests/unit/test_native_json.py compares them).

use std::io::{self, Write};

use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, ReflectMessage, SerializeOptions, Value,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::Serialize;
use serde_json::ser::Formatter;

/// Renders payloads of one message type.
#[pyclass(frozen)]
struct Renderer {
    descriptor: MessageDescriptor,
    options: SerializeOptions,
}

#[pymethods]
impl Renderer {
    /// `file_descriptor_set`: a serialized FileDescriptorSet holding `message_name`'s file and
    /// every file it imports.
    #[new]
    fn new(file_descriptor_set: &[u8], message_name: &str) -> PyResult<Self> {
        let pool = DescriptorPool::decode(file_descriptor_set)
            .map_err(|e| PyValueError::new_err(format!("bad descriptor set: {e}")))?;
        let descriptor = pool.get_message_by_name(message_name).ok_or_else(|| {
            PyValueError::new_err(format!("no message {message_name} in the set"))
        })?;
        let options = SerializeOptions::new().use_proto_field_name(true);
        Ok(Self {
            descriptor,
            options,
        })
    }

    /// The JSON text of each payload; a ValueError names the first that cannot be rendered.
    fn render(&self, payloads: Vec<Bound<'_, PyBytes>>) -> PyResult<Vec<String>> {
        payloads
            .iter()
            .enumerate()
            .map(|(i, payload)| {
                self.one(payload.as_bytes())
                    .map_err(|e| PyValueError::new_err(format!("payload {i}: {e}")))
            })
            .collect()
    }
}

impl Renderer {
    fn one(&self, payload: &[u8]) -> Result<String, String> {
        let tree = match self.descriptor.full_name() {
            // JSON already: read by prost's own types, not through reflection (several times faster)
            "google.protobuf.Struct" => {
                struct_json(&prost_types::Struct::decode(payload).map_err(|e| e.to_string())?)?
            }
            "google.protobuf.Value" => {
                value_json(&prost_types::Value::decode(payload).map_err(|e| e.to_string())?)?
            }
            "google.protobuf.ListValue" => {
                list_json(&prost_types::ListValue::decode(payload).map_err(|e| e.to_string())?)?
            }
            _ => {
                let message = DynamicMessage::decode(self.descriptor.clone(), payload)
                    .map_err(|e| e.to_string())?;
                refuse_unlike_python(&message)?;
                message
                    .serialize_with_options(serde_json::value::Serializer, &self.options)
                    .map_err(|e| e.to_string())?
            }
        };
        let mut out = Vec::with_capacity(payload.len() * 2);
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonJson);
        tree.serialize(&mut serializer).map_err(|e| e.to_string())?;
        String::from_utf8(out).map_err(|e| e.to_string())
    }
}

/// The values whose JSON prost-reflect prints unlike Python, refused so that the Python renderer
/// renders their message (both are rare: nobody sends them on purpose):
/// - -0.0 in a float or double without presence: upb tells it from 0.0 by its bits and Python
///   prints it, prost-reflect takes it for the default and leaves the field out;
/// - a subnormal float32: Python prints at least 6 significant digits, ryu the fewest.
fn refuse_unlike_python(message: &DynamicMessage) -> Result<(), String> {
    for field in message.descriptor().fields() {
        let value = message.get_field(&field);
        let negative_zero = match value.as_ref() {
            Value::F64(number) => *number == 0.0 && number.is_sign_negative(),
            Value::F32(number) => *number == 0.0 && number.is_sign_negative(),
            _ => false,
        };
        if negative_zero && !field.supports_presence() {
            return Err(format!("{} holds -0.0", field.full_name()));
        }
        refuse_value(value.as_ref(), message.has_field(&field))?;
    }
    Ok(())
}

fn refuse_value(value: &Value, set: bool) -> Result<(), String> {
    match value {
        Value::F32(number) if number.is_subnormal() => {
            Err(format!("holds the subnormal float32 {number:e}"))
        }
        Value::Message(inner) if set => refuse_unlike_python(inner),
        Value::List(items) => items.iter().try_for_each(|item| refuse_value(item, true)),
        Value::Map(entries) => entries
            .values()
            .try_for_each(|item| refuse_value(item, true)),
        _ => Ok(()),
    }
}

fn struct_json(fields: &prost_types::Struct) -> Result<serde_json::Value, String> {
    let mut object = serde_json::Map::new();
    for (key, value) in &fields.fields {
        object.insert(key.clone(), value_json(value)?);
    }
    Ok(serde_json::Value::Object(object))
}

fn list_json(values: &prost_types::ListValue) -> Result<serde_json::Value, String> {
    values
        .values
        .iter()
        .map(value_json)
        .collect::<Result<Vec<_>, _>>()
        .map(serde_json::Value::Array)
}

/// A Value unset or null is null; NaN and the infinities have no JSON: an error, as in Python.
fn value_json(value: &prost_types::Value) -> Result<serde_json::Value, String> {
    use prost_types::value::Kind;
    Ok(match &value.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(flag)) => serde_json::Value::Bool(*flag),
        Some(Kind::NumberValue(number)) => serde_json::Number::from_f64(*number)
            .map(serde_json::Value::Number)
            .ok_or_else(|| format!("a google.protobuf.Value holds {number}, which JSON cannot"))?,
        Some(Kind::StringValue(text)) => serde_json::Value::String(text.clone()),
        Some(Kind::ListValue(values)) => list_json(values)?,
        Some(Kind::StructValue(fields)) => struct_json(fields)?,
    })
}

/// Prints JSON as Python's `json.dumps(value, sort_keys=True)` does: ", " and ": " between
/// items, every character outside printable ASCII escaped, floats as Python's `repr`. Keys are
/// sorted already: serde_json's maps are ordered by key.
struct PythonJson;

impl Formatter for PythonJson {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        item_separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        item_separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if c.is_ascii() && c != '\x7f' {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            start = i + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn write_number_str<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        value: &str,
    ) -> io::Result<()> {
        if value.contains(['.', 'e', 'E']) {
            writer.write_all(python_float_repr(value).as_bytes())
        } else {
            writer.write_all(value.as_bytes())
        }
    }
}

fn item_separator<W: ?Sized + Write>(writer: &mut W, first: bool) -> io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

/// A shortest round-trip float text (as ryu writes it: "3.0", "1e16", "1.5e-5") in Python's
/// `repr` layout: positional for a decimal exponent from -4 to 15, else "1e+16", "1.5e-05".
fn python_float_repr(text: &str) -> String {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{whole}{fraction}");
    let trimmed = all.trim_start_matches('0');
    let point = whole.len() as i32 + exponent - (all.len() - trimmed.len()) as i32;
    let digits = trimmed.trim_end_matches('0');
    let mut out = String::from(if negative { "-" } else { "" });
    if digits.is_empty() {
        out.push_str("0.0");
        return out;
    }
    let count = digits.len() as i32;
    if point > -4 && point <= 16 {
        if point <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-point) as usize));
            out.push_str(digits);
        } else if point >= count {
            out.push_str(digits);
            out.push_str(&"0".repeat((point - count) as usize));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if count > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let shown = point - 1;
        out.push_str(&format!(
            "e{}{:02}",
            if shown < 0 { '-' } else { '+' },
            shown.abs()
        ));
    }
    out
}

#[pymodule]
fn _protojson(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Renderer>()
}

#[cfg(test)]
mod tests {
    use super::python_float_repr;

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            ("3.0", "3.0"),
            ("-0.0", "-0.0"),
            ("1e16", "1e+16"),
            ("1e15", "1000000000000000.0"),
            ("1.5e-5", "1.5e-05"),
            ("0.0001", "0.0001"),
            ("123.456", "123.456"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("-2.5e-7", "-2.5e-07"),
        ];
        for (ryu, python) in cases {
            assert_eq!(python_float_repr(ryu), python, "{ryu}");
        }
    }
}
