//! What an application reports at the end of a run: a summary of named values and
//! columnar tables. The binding turns them into a dict and NumPy columns; Python writes
//! the summary under the app's name in summary.json and each table, with an `app`
//! column, into `app_<table>.parquet`.

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

/// A column of a table: one value per row.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    F64(Vec<f64>),
    U32(Vec<u32>),
    Bool(Vec<bool>),
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
        Table { name, columns: Vec::new() }
    }
    pub fn col(mut self, name: &'static str, c: Column) -> Table {
        self.columns.push((name, c));
        self
    }
    /// Rows (0 for a table without columns); panics in debug builds if columns differ.
    pub fn rows(&self) -> usize {
        let n = self.columns.first().map_or(0, |(_, c)| c.len());
        debug_assert!(self.columns.iter().all(|(_, c)| c.len() == n), "table {}: ragged columns", self.name);
        n
    }
}

/// One app's report.
#[derive(Clone, Debug, PartialEq)]
pub struct AppOutput {
    pub name: String,
    pub kind: &'static str,
    pub summary: Vec<(String, Value)>,
    pub tables: Vec<Table>,
}

impl AppOutput {
    pub fn new(name: &str, kind: &'static str) -> AppOutput {
        AppOutput { name: name.to_string(), kind, summary: Vec::new(), tables: Vec::new() }
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
        self.columns.iter().find(|(n, _)| *n == name).map(|(_, c)| c)
    }
}
