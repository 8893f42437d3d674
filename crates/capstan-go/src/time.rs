//! Go's `time` package as templates and codecs observe it: [`GoTime`] (an instant viewed in a
//! zone, Go's layout-based `Format` and `Parse`), [`Zone`], [`duration`], and `time.Time` as a
//! value. `Local` is UTC: the renderer runs in UTC, as the oracle does.

pub mod duration;
mod instant;
mod zone;

use std::any::Any;
use std::rc::Rc;

use crate::value::{GoType, Method, Object, Value};

pub use instant::{GoTime, days_from_civil, parse};
pub use zone::Zone;

/// Go's `%T` of a time value; also the named parameter type of functions taking one.
pub const TIME: &str = "time.Time";

/// Go's `time.Local`: the renderer runs in UTC, as the oracle does.
pub fn local_zone() -> Zone {
    Zone::fixed("Local", 0, "UTC")
}

/// `time.ParseInLocation(layout, value, zone)`; the error is Go's message.
pub fn parse_in_location(layout: &str, value: &str, zone: &Zone) -> Result<GoTime, String> {
    instant::parse(layout, value, zone)
}

/// Go's zero `time.Time{}` (January 1, year 1, UTC).
pub fn zero_time() -> GoTime {
    GoTime {
        unix: instant::days_from_civil(1, 1, 1) * 86_400,
        nanos: 0,
        zone: Zone::utc(),
    }
}

/// A `time.Time` as a template value (fields `Year`, `Unix`…, method `Format`).
pub fn time_value(t: GoTime) -> Value {
    Value::Object(Rc::new(TimeObject(t)))
}

/// The `time.Time` inside a value, if it holds one.
pub fn as_time(v: &Value) -> Option<GoTime> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<TimeObject>().map(|t| t.0.clone()),
        _ => None,
    }
}

struct TimeObject(GoTime);

impl Object for TimeObject {
    fn type_name(&self) -> String {
        TIME.into()
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn field(&self, name: &str) -> Option<Value> {
        let t = &self.0;
        let c = t.civil();
        Some(match name {
            "Year" => Value::Int(c.year),
            "Month" => Value::from(t.format("January")),
            "Day" => Value::Int(i64::from(c.day)),
            "Hour" => Value::Int(i64::from(c.hour)),
            "Minute" => Value::Int(i64::from(c.minute)),
            "Second" => Value::Int(i64::from(c.second)),
            "Nanosecond" => Value::Int(i64::from(t.nanos)),
            "YearDay" => Value::Int(i64::from(c.yday)),
            "Weekday" => Value::from(t.format("Monday")),
            "Unix" => Value::Int64(t.unix),
            "UnixMilli" => Value::Int64(t.unix.saturating_mul(1000) + i64::from(t.nanos / 1_000_000)),
            "UnixNano" => Value::Int64(
                t.unix
                    .saturating_mul(1_000_000_000)
                    .saturating_add(i64::from(t.nanos)),
            ),
            "Location" => Value::Object(Rc::new(LocationObject(t.zone.name.clone()))),
            "UTC" => time_value(t.in_zone(Zone::utc())),
            "Local" => time_value(t.in_zone(local_zone())),
            "IsZero" => Value::Bool(t.unix == zero_time().unix && t.nanos == 0),
            "String" => Value::from(t.string()),
            _ => return None,
        })
    }

    fn method(&self, name: &str) -> Option<Method> {
        let t = self.0.clone();
        match name {
            "Format" => Some(Method::new(&[GoType::String], move |a| {
                Ok(Value::from(t.format(a[0].as_str().unwrap_or(""))))
            })),
            _ => None,
        }
    }

    fn format(&self) -> String {
        self.0.string()
    }

    fn stringer(&self) -> Option<String> {
        Some(self.0.string())
    }

    /// `MarshalJSON`: RFC 3339 with nanoseconds.
    fn to_data(&self) -> Value {
        Value::from(self.0.format("2006-01-02T15:04:05.999999999Z07:00"))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A `*time.Location`: it prints its name.
struct LocationObject(String);

impl Object for LocationObject {
    fn type_name(&self) -> String {
        "*time.Location".into()
    }

    fn kind(&self) -> &'static str {
        "ptr"
    }

    fn field(&self, name: &str) -> Option<Value> {
        (name == "String").then(|| Value::from(self.0.as_str()))
    }

    fn format(&self) -> String {
        self.0.clone()
    }

    fn stringer(&self) -> Option<String> {
        Some(self.0.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
