//! What each parameter is, read from its one statement
//! (`BuildParams`/`SearchParams` through clap): the keyword, the flag, the
//! kind of value, the accepted values and the doc line. Python's docstrings
//! and its check of the type stub are made from this, so they cannot
//! disagree with the CLI's help.

use super::Params;
use std::any::TypeId;

/// The kind of value a parameter takes, as Python names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Bool,
    Int,
    Float,
    Str,
}

impl Kind {
    pub fn python(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Str => "str",
        }
    }
}

/// One parameter as callers see it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ParamDoc {
    /// The Python keyword: the flag with `_` for `-` (`graph_degree`).
    pub keyword: String,
    /// The long flag without its dashes (`graph-degree`).
    pub flag: String,
    /// The field of `BuildParams`/`SearchParams` it sets.
    pub field: String,
    pub kind: Kind,
    /// The values a string parameter accepts, when they are a fixed list.
    pub values: Vec<String>,
    /// The doc line (the CLI's help).
    pub help: String,
}

impl ParamDoc {
    /// What a value of this parameter must be, for error messages.
    pub fn expected(&self) -> String {
        if !self.values.is_empty() {
            return format!("one of {}", self.values.join(", "));
        }
        match self.kind {
            Kind::Bool => "true or false".into(),
            Kind::Int => "a non-negative integer".into(),
            Kind::Float => "a number".into(),
            Kind::Str => "a value it accepts".into(),
        }
    }
}

/// Every parameter of the set, in declaration order.
pub fn describe(params: Params) -> Vec<ParamDoc> {
    params
        .command()
        .get_arguments()
        .filter_map(|a| {
            let flag = a.get_long()?.to_string();
            let help = a
                .get_long_help()
                .or(a.get_help())
                .map_or(String::new(), |h| h.to_string());
            Some(ParamDoc {
                keyword: flag.replace('-', "_"),
                field: a.get_id().to_string(),
                // A size in MB is parsed to bytes, but given as a number.
                kind: match a.get_value_names() {
                    Some([mb]) if mb == "MB" => Kind::Float,
                    _ => kind_of(a.get_value_parser()),
                },
                values: a
                    .get_possible_values()
                    .iter()
                    .filter(|v| !v.is_hide_set())
                    .map(|v| v.get_name().to_string())
                    .collect(),
                help,
                flag,
            })
        })
        .collect()
}

fn kind_of(parser: &clap::builder::ValueParser) -> Kind {
    let t = parser.type_id();
    let is = |id: TypeId| t == id;
    if is(TypeId::of::<bool>()) {
        Kind::Bool
    } else if [
        TypeId::of::<usize>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<i64>(),
    ]
    .into_iter()
    .any(is)
    {
        Kind::Int
    } else if is(TypeId::of::<f32>()) || is(TypeId::of::<f64>()) {
        Kind::Float
    } else {
        Kind::Str
    }
}
