//! Columns: one `Vec` per named column, handed over whole at the end of a run.
//!
//! [`Column`] is a typed column (the binding turns each into a NumPy array that takes
//! over the `Vec`'s buffer, or a list of `str`). `column_store!` (below)
//! declares a store of columns (the time series of `metrics::timeseries`) once: the
//! struct, `try_reserve` (growth that fails instead of aborting), `with_capacity`, `len`,
//! `spare_rows`, `ROW_BYTES` (the sum of the columns' element sizes, for the memory
//! estimate) and `into_columns` (the columns by name, in declaration order).
//!
//! A store inside a serialized output is [`handed_over`]: serde writes a null in its place
//! (so the output keeps its keys in their order), and the binding puts the columns there.
//!
//! A leaf. Imports: nothing of the crate (serde only).

/// A column of values, one per row.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    F64(Vec<f64>),
    U32(Vec<u32>),
    U16(Vec<u16>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U16(v) => v.len(),
            Column::U8(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// For `#[serde(serialize_with)]` on a column store (or a struct's columns): a null that
/// marks the place of columns handed over whole (`into_columns`), not copied through serde.
pub fn handed_over<T, S: serde::Serializer>(_: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_unit()
}

/// A `Vec` of this element type becomes a [`Column`].
pub trait ColumnType: Sized {
    fn column(v: Vec<Self>) -> Column;
}

macro_rules! column_types {
    ($($t:ty => $variant:ident),*) => {
        $(impl ColumnType for $t {
            fn column(v: Vec<Self>) -> Column {
                Column::$variant(v)
            }
        })*
    };
}
column_types!(u64 => U64, f64 => F64, u32 => U32, u16 => U16, u8 => U8, bool => Bool, String => Str);

/// Declares a store of columns: `pub struct Name { col: Type, ... }` becomes a struct of
/// `pub col: Vec<Type>` with the methods listed in the module docs. The first column is
/// the one `len` and `spare_rows` read (every column has the same length).
macro_rules! column_store {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: Vec<$ty>, )+
        }

        impl $name {
            /// Bytes one row takes across all columns.
            pub const ROW_BYTES: usize = 0 $( + ::std::mem::size_of::<$ty>() )+;
            /// The columns' names, in order.
            pub const COLUMNS: &'static [&'static str] = &[$( stringify!($field) ),+];

            /// Make room for `additional` more rows in every column, or fail without aborting.
            pub fn try_reserve(&mut self, additional: usize) -> Result<(), ::std::collections::TryReserveError> {
                $( self.$field.try_reserve(additional)?; )+
                Ok(())
            }

            pub fn with_capacity(n: usize) -> Self {
                $name { $( $field: Vec::with_capacity(n), )+ }
            }

            /// Rows that fit before the next reservation.
            pub fn spare_rows(&self) -> usize {
                $crate::metrics::columns::column_store!(@first self, capacity, $($field),+) - $crate::metrics::columns::column_store!(@first self, len, $($field),+)
            }

            pub fn len(&self) -> usize {
                $crate::metrics::columns::column_store!(@first self, len, $($field),+)
            }

            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// The columns by name, in declaration order (the buffers move, no copy).
            pub fn into_columns(self) -> Vec<(&'static str, $crate::metrics::columns::Column)> {
                use $crate::metrics::columns::ColumnType;
                vec![$( (stringify!($field), <$ty>::column(self.$field)) ),+]
            }
        }
    };
    (@first $self:ident, $method:ident, $first:ident $(, $rest:ident)*) => {
        $self.$first.$method()
    };
}
pub(crate) use column_store;
