//! Python's keyword arguments for a build or a search, parsed by the
//! engine's own parameter sets (`stratavec::args`): a keyword is the CLI's
//! flag with `_` for `-`, given the value the flag would be. The values are
//! turned into the flag's text here; what they mean, which values are
//! accepted and the message for one that is not, are the engine's.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};
use stratavec::args::{describe, Given, Kind, Params};

/// The parameters named by `kwargs` (a `None` value leaves the parameter
/// to its default), with `extra` pairs the binding adds itself.
pub fn given(
    params: Params,
    kwargs: Option<&Bound<'_, PyDict>>,
    extra: &[(&str, String)],
) -> PyResult<Given> {
    let docs = describe(params);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (key, value) in kwargs.into_iter().flat_map(|d| d.iter()) {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        let kind = docs.iter().find(|d| d.keyword == key).map(|d| d.kind);
        pairs.push((key.clone(), text(&key, kind, &value)?));
    }
    for (k, v) in extra {
        if !pairs.iter().any(|(key, _)| key == k) {
            pairs.push((k.to_string(), v.clone()));
        }
    }
    Given::from_keywords(params, &pairs).map_err(crate::to_py)
}

/// A keyword's value as the flag's text. Only bool, int, float and str go
/// through (numpy scalars too); anything else is a `TypeError` naming the
/// keyword, so a list or a dict is never turned into a string by accident.
fn text(key: &str, kind: Option<Kind>, v: &Bound<'_, PyAny>) -> PyResult<String> {
    // numpy's bool (`numpy.bool`, `bool_` before numpy 2) is no `bool`.
    let type_name: String = v.get_type().name()?.extract()?;
    if v.is_instance_of::<PyBool>() || matches!(type_name.as_str(), "bool" | "bool_") {
        return Ok(v.is_truthy()?.to_string());
    }
    if v.is_instance_of::<PyString>() {
        return v.extract();
    }
    if v.is_instance_of::<PyFloat>() || v.hasattr("__float__")? && !v.hasattr("__index__")? {
        let f: f64 = v.extract()?;
        return Ok(format!("{f}"));
    }
    if v.hasattr("__index__")? {
        let i: i128 = v.call_method0("__index__")?.extract()?;
        return Ok(i.to_string());
    }
    let want = kind.map_or("a bool, int, float or str", |k| k.python());
    Err(PyTypeError::new_err(format!(
        "{key}: expected {want}, found {}",
        v.get_type().name()?
    )))
}

/// `stratavec._stratavec.parameters("build" | "search")`: every parameter
/// of the set as a dict (keyword, flag, field, kind, values, help), in
/// declaration order; the package's docstrings and the stub's check are
/// made from it.
#[pyfunction]
pub fn parameters<'py>(py: Python<'py>, which: &str) -> PyResult<Bound<'py, PyList>> {
    let params = match which {
        "build" => Params::Build,
        "search" => Params::Search,
        other => {
            return Err(PyValueError::new_err(format!(
                "parameters: expected \"build\" or \"search\", found {other:?}"
            )))
        }
    };
    let list = PyList::empty(py);
    for d in describe(params) {
        let dict = PyDict::new(py);
        dict.set_item("keyword", &d.keyword)?;
        dict.set_item("flag", format!("--{}", d.flag))?;
        dict.set_item("field", &d.field)?;
        dict.set_item("kind", d.kind.python())?;
        dict.set_item("values", &d.values)?;
        dict.set_item("help", &d.help)?;
        list.append(dict)?;
    }
    Ok(list)
}
