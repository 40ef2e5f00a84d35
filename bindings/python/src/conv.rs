//! Values crossing the bridge: Python objects ↔ JSON values without JSON
//! text, stored bytes as `bytes`, engine errors as the package's
//! exceptions. Every conversion to Python runs on the loop's thread, when
//! the call's asyncio future is resolved, never on an engine thread.

use bytes::Bytes;
use narad_core::json::MAX_PARSE_DEPTH;
use narad_engine::EngineError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// A Python value as JSON: `None`, `bool`, `int`, `float`, `str`, lists,
/// tuples and dicts with `str` keys. Anything else (an `int` beyond 64
/// bits and a float that is not finite included) is a `TypeError` that
/// names the type, never the value (it may be protected data). Nesting
/// deeper than any record parses ([`MAX_PARSE_DEPTH`], a list that holds
/// itself included) is refused as the engine refuses it
/// (`nesting_too_deep`), before it could exhaust the stack here or in
/// the engine.
pub fn value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    value_at(obj, 0)
}

fn value_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        // JSON has no bound, but the engine's parser reads a number past
        // 64 bits as a float: refused, as a float that is not finite is,
        // rather than altered (PyO3 would say only `OverflowError`).
        return obj.extract::<u64>().map(Value::from).map_err(|_| {
            PyTypeError::new_err(
                "an int outside the 64-bit range is not JSON the engine keeps exactly \
                 (pass it as a str)",
            )
        });
    }
    if obj.is_instance_of::<PyFloat>() {
        let f: f64 = obj.extract()?;
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| PyTypeError::new_err("a float that is not finite is not JSON"));
    }
    // Only containers remain: each is one level deeper.
    let depth = depth + 1;
    if depth > MAX_PARSE_DEPTH {
        let e = narad_core::Limits::default().too_deep();
        return Err(crate::errors::to_py(EngineError::Rejected {
            code: e.code.as_str(),
            section: "5",
            message: e.message,
        }));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, v) in d.iter() {
            let k = k
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("JSON object keys must be str"))?;
            m.insert(k.to_cow()?.into_owned(), value_at(&v, depth)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|v| value_at(&v, depth))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|v| value_at(&v, depth))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    let ty = obj.get_type().name()?;
    Err(PyTypeError::new_err(format!("a {ty} is not JSON")))
}

/// [`value`] of an optional argument.
pub fn opt_value(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Value>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => value(o).map(Some),
    }
}

/// A JSON value as Python objects (dicts, lists, str, int, float, bool, None).
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Object(m) => map_to_py(py, m)?.into_any(),
    })
}

/// A JSON object as a dict.
pub fn map_to_py<'py>(py: Python<'py>, m: &Map<String, Value>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, x) in m {
        d.set_item(k, to_py(py, x)?)?;
    }
    Ok(d)
}

/// A JSON value returned to Python (converted on the loop's thread).
pub struct Json(pub Value);

impl<'py> IntoPyObject<'py> for Json {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        to_py(py, &self.0)
    }
}

/// Stored bytes returned to Python as `bytes`.
pub struct Raw(pub Bytes);

impl<'py> IntoPyObject<'py> for Raw {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(PyBytes::new(py, &self.0))
    }
}

/// A JSON record the engine produced, for Python as `(type, bytes)`. Its
/// `type` member (empty when it has none) is read when this is made, where
/// the call ran, without building the record; Python parses the rest only
/// if asked.
pub struct Typed {
    ty: String,
    raw: Bytes,
}

impl From<Bytes> for Typed {
    fn from(raw: Bytes) -> Self {
        #[derive(serde::Deserialize)]
        struct Type<'a> {
            #[serde(rename = "type", borrow, default)]
            ty: std::borrow::Cow<'a, str>,
        }
        let ty = serde_json::from_slice::<Type<'_>>(&raw)
            .map_or_else(|_| String::new(), |t| t.ty.into_owned());
        Self { ty, raw }
    }
}

impl<'py> IntoPyObject<'py> for Typed {
    type Target = PyTuple;
    type Output = Bound<'py, PyTuple>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        (self.ty, Raw(self.raw)).into_pyobject(py)
    }
}

/// The result of an engine call: an [`EngineError`] becomes the package's
/// exception only on the loop's thread.
pub enum Fail {
    /// Refused or failed in the engine.
    Engine(EngineError),
    /// The store could not be opened (its own code: `locked`,
    /// `not_a_store`, `invalid_url`, ...).
    Open(narad_stores::OpenError),
    /// Failed in the bridge.
    Py(PyErr),
}

impl From<EngineError> for Fail {
    fn from(e: EngineError) -> Self {
        Self::Engine(e)
    }
}

impl From<narad_stores::OpenError> for Fail {
    fn from(e: narad_stores::OpenError) -> Self {
        Self::Open(e)
    }
}

impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Self {
        Self::Py(e)
    }
}

impl Fail {
    /// The Python exception (needs the GIL).
    pub fn into_py(self) -> PyErr {
        match self {
            Self::Engine(e) => crate::errors::to_py(e),
            Self::Open(e) => crate::errors::open_to_py(&e),
            Self::Py(e) => e,
        }
    }
}
