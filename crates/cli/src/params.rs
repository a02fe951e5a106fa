//! The engine's parameter sets as flags of a subcommand
//! (`#[command(flatten)]`): the flags are `BuildParams`' and
//! `SearchParams`' own (`stratavec::args`), stated there once.

use clap::{ArgMatches, Args, Command, FromArgMatches};
use stratavec::args::{Given, Params};

/// `BuildParams` as flags.
#[derive(Clone, Debug)]
pub struct BuildFlags(pub Given);

impl FromArgMatches for BuildFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(BuildFlags(Given::from_matches(m)))
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.0 = Given::from_matches(m);
        Ok(())
    }
}

impl Args for BuildFlags {
    fn augment_args(cmd: Command) -> Command {
        Params::Build.augment(cmd)
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        Params::Build.augment(cmd)
    }
}

/// `SearchParams` as flags, with `-L` a list: `search` prints one row per
/// list size.
#[derive(Clone, Debug)]
pub struct SearchFlags {
    pub given: Given,
    /// The list sizes of the rows.
    pub complexities: Vec<usize>,
}

/// `search -L` when not given: one row each.
const ROWS: [&str; 4] = ["20", "50", "100", "200"];

impl FromArgMatches for SearchFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let complexities = m
            .get_many::<usize>("complexity")
            .map_or(Vec::new(), |v| v.copied().collect());
        Ok(SearchFlags {
            given: Given::from_matches(m).without("complexity"),
            complexities,
        })
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for SearchFlags {
    fn augment_args(cmd: Command) -> Command {
        Params::Search.augment(cmd).mut_arg("complexity", |a| {
            a.num_args(1..)
                .action(clap::ArgAction::Append)
                .default_values(ROWS)
                .help("Search list sizes L to sweep, one row each (raised to k when below)")
        })
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
