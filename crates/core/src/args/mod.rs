//! Parameters as a caller names them — CLI flags or Python keywords — over
//! the defaults of a profile (build) or of an index (search).
//!
//! [`BuildParams`] and [`SearchParams`] state each parameter once: its field,
//! type and doc line. clap reads that one statement for both callers (the
//! CLI flattens the structs into its subcommands; Python's keywords are
//! parsed here as `--name=value` by the same parser), so a flag and a
//! keyword cannot drift apart in name, type, accepted values or message.
//! Only what a caller gave is applied: fields are updated from the matches
//! (`clap::FromArgMatches::update_from_arg_matches`), never reset to a
//! flag's default, so profile and index defaults stay where they are made.

pub mod describe;

pub use describe::{describe, Kind, ParamDoc};

use crate::error::{Error, Result};
use crate::index::fit::Unset;
use crate::search::{in_flight_for, Switches};
use crate::{BuildParams, SearchParams};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches};

/// Which parameter set: what `stratavec build` / `build_index` take, or
/// what `stratavec search` / `Index.search` take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params {
    Build,
    Search,
}

impl Params {
    /// The set's parser on its own: every argument optional, as only what
    /// is given is applied.
    pub fn command(self) -> clap::Command {
        let cmd = clap::Command::new(self.name()).no_binary_name(true);
        self.augment(cmd)
    }

    /// `cmd` with the set's arguments added (what a CLI subcommand
    /// flattens).
    pub fn augment(self, cmd: clap::Command) -> clap::Command {
        match self {
            Params::Build => BuildParams::augment_args_for_update(cmd),
            Params::Search => SearchParams::augment_args_for_update(cmd),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Params::Build => "build",
            Params::Search => "search",
        }
    }
}

/// The parameters a caller gave, by name.
#[derive(Clone, Debug)]
pub struct Given {
    matches: ArgMatches,
}

impl Given {
    /// What a CLI subcommand's command line gave.
    pub fn from_matches(matches: &ArgMatches) -> Given {
        Given {
            matches: matches.clone(),
        }
    }

    /// Keyword arguments (`graph_degree`, `"48"`) parsed as the flags of the
    /// same names (`--graph-degree=48`). An unknown keyword is refused
    /// naming the accepted ones; a value that does not parse, naming the
    /// keyword, what it takes and what was found.
    pub fn from_keywords(params: Params, pairs: &[(String, String)]) -> Result<Given> {
        let cmd = params.command();
        let docs = describe(params);
        let mut argv = Vec::with_capacity(pairs.len());
        for (keyword, value) in pairs {
            if !docs.iter().any(|d| &d.keyword == keyword) {
                let accepted: Vec<&str> = docs.iter().map(|d| d.keyword.as_str()).collect();
                return Err(Error::argument(
                    format!("{}: keyword {keyword}", params.name()),
                    format!("one of {}", accepted.join(", ")),
                    format!("{keyword}={value}"),
                ));
            }
            argv.push(format!("--{}={value}", keyword.replace('_', "-")));
        }
        match cmd.try_get_matches_from(&argv) {
            Ok(matches) => Ok(Given { matches }),
            Err(e) => Err(keyword_error(&e, &docs, pairs)),
        }
    }

    /// Nothing given: every parameter at its default.
    pub fn none(params: Params) -> Given {
        let matches = params.command().get_matches_from(Vec::<String>::new());
        Given { matches }
    }

    /// Whether the caller gave the parameter whose field is `id`.
    pub fn has(&self, id: &str) -> bool {
        self.matches.ids().any(|i| i == id)
            && self.matches.value_source(id) == Some(ValueSource::CommandLine)
    }

    /// The value given for the field `id`, if any.
    pub fn get<T: Clone + Send + Sync + 'static>(&self, id: &str) -> Option<T> {
        if !self.has(id) {
            return None;
        }
        self.matches.try_get_one::<T>(id).ok().flatten().cloned()
    }

    /// The build parameters: the given profile's (`BuildParams::for_profile`)
    /// under what was given. What is left unset among the parameters the
    /// build can fit to the data (`index::fit`) is marked so.
    pub fn build_params(&self) -> Result<BuildParams> {
        let profile: String = self
            .get("profile")
            .unwrap_or_else(|| crate::profile::DEFAULT.to_string());
        let mut p = BuildParams::for_profile(&profile);
        p.update_from_arg_matches(&self.matches)
            .map_err(|e| clap_error(Params::Build, &e))?;
        p.unset = Unset {
            pq_bytes: !self.has("pq_bytes"),
            page_size: !self.has("page_size"),
            complexity: !self.has("complexity"),
            pipelined_refinement: !self.has("pipelined_refinement"),
        };
        Ok(p)
    }

    /// The search parameters: the index's defaults for the strategy
    /// switches given (`Index::search_defaults`) under what was given.
    /// Queries in flight follow the beam width unless given
    /// ([`in_flight_for`]); a k-NN list is raised to k, and a range search
    /// returns all it finds (k = 1).
    pub fn search_params(
        &self,
        defaults: impl FnOnce(&Switches) -> SearchParams,
    ) -> Result<SearchParams> {
        let switches = Switches {
            page_search: self.get("page_search"),
            pipeline: self.get("pipeline"),
            two_stage: self.get("two_stage"),
            pipelined: self.get("pipelined"),
            width: self.get("width"),
        };
        let mut p = defaults(&switches);
        p.update_from_arg_matches(&self.matches)
            .map_err(|e| clap_error(Params::Search, &e))?;
        if !self.has("in_flight") {
            p.in_flight = in_flight_for(p.beam_width);
        }
        match p.radius {
            Some(_) => p.k = 1,
            None => p.complexity = p.complexity.max(p.k),
        }
        Ok(p)
    }

    /// These parameters with `id` removed, so it is not applied (the CLI's
    /// `-L` is a list of rows, each applied by the caller).
    pub fn without(mut self, id: &str) -> Given {
        let _ = self.matches.try_clear_id(id);
        self
    }
}

/// A size in MB (10^6 bytes, as every budget here) as bytes
/// (`--memory-budget-mb`).
pub fn megabytes(s: &str) -> std::result::Result<u64, String> {
    let mb: f64 = s
        .parse()
        .map_err(|e| format!("expected a number of MB (10^6 bytes), found {s:?}: {e}"))?;
    if !(mb.is_finite() && mb >= 0.0 && mb * 1e6 < u64::MAX as f64) {
        return Err(format!(
            "expected a non-negative number of MB (10^6 bytes), found {s}"
        ));
    }
    Ok((mb * 1e6) as u64)
}

/// A keyword's value that did not parse, named by the keyword.
fn keyword_error(e: &clap::Error, docs: &[ParamDoc], pairs: &[(String, String)]) -> Error {
    use clap::error::{ContextKind, ContextValue};
    let flag = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    // clap names the argument as its usage: `--graph-degree <GRAPH_DEGREE>`.
    let named = |d: &&ParamDoc| flag.split([' ', '=']).next() == Some(&format!("--{}", d.flag));
    let doc = docs.iter().find(named);
    let Some(doc) = doc else {
        return Error::argument("keywords", "values the parameters take", e.to_string());
    };
    let found = pairs
        .iter()
        .find(|(k, _)| k == &doc.keyword)
        .map_or(String::new(), |(_, v)| v.clone());
    let why = std::error::Error::source(e).map_or(String::new(), |s| format!(" ({s})"));
    Error::argument(&doc.keyword, format!("{}{why}", doc.expected()), found)
}

/// A parsed value clap could not hand over as the field's type (a bug in
/// a parameter's declaration, not in the caller's input).
fn clap_error(params: Params, e: &clap::Error) -> Error {
    Error::argument(
        format!("{} parameters", params.name()),
        "values of the fields' types",
        e.to_string(),
    )
}
