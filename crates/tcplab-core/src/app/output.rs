//! What an application reports at the end of a run: a summary of named values and
//! columnar tables. `Serialize` gives the binding the app's dict (name, kind, summary);
//! the tables are handed over as NumPy columns (`Table::columns`). Python writes the
//! summary under the app's name in summary.json and each table, with an `app` column, into
//! `app_<table>.parquet`.

pub use crate::metrics::columns::Column;

/// A summary value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(String),
    /// A nested mapping (e.g. seconds on each profile), in order.
    Map(Vec<(String, Value)>),
    /// A list of numbers (e.g. each connection's share of bytes).
    List(Vec<Value>),
    /// No value (a percentile of no samples); `null` in JSON.
    None,
}

/// A named table; every column has the same number of rows. Names used across apps:
/// `requests` (one row per request/transaction), `segments` (HLS), `bursts`
/// (broadcast), `series` (per sample time: buffers, queue lengths).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    pub fn new(name: &'static str) -> Table {
        Table {
            name,
            columns: Vec::new(),
        }
    }
    pub fn col(mut self, name: &'static str, c: Column) -> Table {
        self.columns.push((name, c));
        self
    }
    /// Rows (0 for a table without columns); panics in debug builds if columns differ.
    pub fn rows(&self) -> usize {
        let n = self.columns.first().map_or(0, |(_, c)| c.len());
        debug_assert!(
            self.columns.iter().all(|(_, c)| c.len() == n),
            "table {}: ragged columns",
            self.name
        );
        n
    }
}

/// One app's report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AppOutput {
    pub name: String,
    pub kind: &'static str,
    /// Named values in order (a mapping in the output).
    #[serde(serialize_with = "crate::metrics::serialize_pairs")]
    pub summary: Vec<(String, Value)>,
    /// Columns, handed over whole (not serialized).
    #[serde(skip)]
    pub tables: Vec<Table>,
}

impl AppOutput {
    pub fn new(name: &str, kind: &'static str) -> AppOutput {
        AppOutput {
            name: name.to_string(),
            kind,
            summary: Vec::new(),
            tables: Vec::new(),
        }
    }
    pub fn put(&mut self, key: &str, v: Value) {
        self.summary.push((key.to_string(), v));
    }
    /// A summary value by key (tests).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.summary.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// A table by name (tests).
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// Serialized as the value itself: a number, a bool, a string, a mapping in order, a
/// list, or null.
impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::U64(x) => s.serialize_u64(*x),
            Value::F64(x) => s.serialize_f64(*x),
            Value::Bool(x) => s.serialize_bool(*x),
            Value::Str(x) => s.serialize_str(x),
            Value::Map(items) => crate::metrics::serialize_pairs(items, s),
            Value::List(items) => s.collect_seq(items),
            Value::None => s.serialize_none(),
        }
    }
}

impl Value {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::U64(v) => Some(*v as f64),
            Value::F64(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::U64(v) => Some(*v),
            _ => None,
        }
    }
}

impl Table {
    /// A column by name (tests).
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c)
    }
}
