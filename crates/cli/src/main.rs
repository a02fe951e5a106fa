//! `stratavec`: build, search and inspect disk-resident ANN indexes.
//! Argument parsing and presentation only; every algorithm is in the
//! `stratavec` library.

#![forbid(unsafe_code)]
// The bench rows are large serde_json::json! literals.
#![recursion_limit = "256"]

mod bench;
mod cmd_bench;
mod cmd_bench_filtered;
mod cmd_bench_io;
mod cmd_bench_updates;
mod cmd_build;
mod cmd_build_collection;
mod cmd_convert;
mod cmd_gt;
mod cmd_info;
mod cmd_relayout;
mod cmd_search;
mod cmd_serve;
mod cmd_shuffle;
mod cmd_synth;
mod cmd_update;
mod measured;
mod params;
mod progress;
mod search_target;
mod search_target_live;
mod serve;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "stratavec",
    version,
    about = "Disk-resident approximate nearest neighbor search"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build an index from a vector file (.fbin/.u8bin/.i8bin/.fvecs/.bvecs/.npy).
    Build(cmd_build::Args),
    /// Build a collection: the data split into segments (by row range or
    /// k-means), each an index; `search` accepts the collection.
    BuildCollection(cmd_build_collection::Args),
    /// Search an index with a query file; report recall against ground truth.
    Search(cmd_search::Args),
    /// Serve an index or collection over HTTP on this machine (POST /search,
    /// /insert and /delete, GET /health, GET /stats), without Ray.
    Serve(cmd_serve::Args),
    /// Compute exact ground truth (brute force) into an .ibin file.
    Gt(cmd_gt::Args),
    /// Show an index's manifest, sizes and build report.
    Info(cmd_info::Args),
    /// Convert a vector file between formats (by extension).
    Convert(cmd_convert::Args),
    /// Write a seeded synthetic data set (base, queries, ground truth).
    Synth(cmd_synth::Args),
    /// Report the overlap ratio OR(G) of an index's layout and after block shuffling.
    Shuffle(cmd_shuffle::Args),
    /// Shuffle an existing diskann-profile index into blocks (the starling layout), streaming it.
    Relayout(cmd_relayout::Args),
    /// Sweep profiles and peers on one data set; JSON lines + Pareto summary.
    Bench(cmd_bench::Args),
    /// Measure the device ceiling: random O_DIRECT reads by size and queue depth.
    BenchIo(cmd_bench_io::Args),
    /// Take profiles through a runbook of inserts, deletes, merges and
    /// searches; recall beside fresh builds, rates, merge cost; JSON lines.
    BenchUpdates(cmd_bench_updates::Args),
    /// Filtered search measured (issue #56): each profile built with the data
    /// set's labels, its filtered queries searched band by band, each way
    /// forced and chosen per query, in interleaved rounds.
    BenchFiltered(cmd_bench_filtered::Args),
    /// Insert vectors into an index or collection (logged and fsynced a
    /// batch at a time; searched from an in-memory delta until a merge).
    Insert(cmd_update::InsertArgs),
    /// Delete ids from an index or collection (never returned again;
    /// dropped by a merge).
    Delete(cmd_update::DeleteArgs),
    /// Write an index's (or each segment's) inserts and deletes into its
    /// next generation.
    Merge(cmd_update::MergeArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(a) => cmd_build::run(a),
        Command::BuildCollection(a) => cmd_build_collection::run(a),
        Command::Search(a) => cmd_search::run(a),
        Command::Serve(a) => cmd_serve::run(a),
        Command::Gt(a) => cmd_gt::run(a),
        Command::Info(a) => cmd_info::run(a),
        Command::Convert(a) => cmd_convert::run(a),
        Command::Synth(a) => cmd_synth::run(a),
        Command::BenchIo(a) => cmd_bench_io::run(a),
        Command::BenchUpdates(a) => cmd_bench_updates::run(a),
        Command::BenchFiltered(a) => cmd_bench_filtered::run(a),
        Command::Insert(a) => cmd_update::insert(a),
        Command::Delete(a) => cmd_update::delete(a),
        Command::Merge(a) => cmd_update::merge(a),
        Command::Bench(a) => cmd_bench::run(a),
        Command::Shuffle(a) => cmd_shuffle::run(a),
        Command::Relayout(a) => cmd_relayout::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// Threads to use when the user does not say: all cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// clap's own consistency checks (unique group names, valid defaults)
    /// run only when a debug build parses that subcommand; run them all.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `build` and `build-collection` take every build parameter and
    /// `search` every search parameter, as the flags the engine states
    /// (`stratavec::args::describe`), which Python's keywords are too.
    #[test]
    fn build_and_search_take_every_parameter_as_its_flag() {
        use stratavec::args::{describe, Params};
        let cli = Cli::command();
        for (sub, params) in [
            ("build", Params::Build),
            ("build-collection", Params::Build),
            ("search", Params::Search),
        ] {
            let cmd = cli.find_subcommand(sub).unwrap();
            let flags: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
            for doc in describe(params) {
                assert!(
                    flags.contains(&doc.flag.as_str()),
                    "{sub}: no --{}",
                    doc.flag
                );
                assert_eq!(doc.keyword, doc.flag.replace('-', "_"));
            }
        }
    }

    /// `--help` of every subcommand but `bench` (whose options mirror
    /// `build` and `search`) says what each argument and option is.
    #[test]
    fn every_argument_has_a_doc_line() {
        let cli = Cli::command();
        let mut missing = vec![];
        for sub in cli.get_subcommands().filter(|s| s.get_name() != "bench") {
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if arg
                    .get_help()
                    .is_none_or(|h| h.to_string().trim().is_empty())
                {
                    missing.push(format!("{} {id}", sub.get_name()));
                }
            }
        }
        assert!(missing.is_empty(), "no doc line: {missing:?}");
    }
}
