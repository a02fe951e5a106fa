"""benchmarks/bench.py without running a bench: scenario files parsed and
checked, the `stratavec bench` command a run becomes, and every ported
section regenerated from committed rows byte for byte."""

import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
pytest.importorskip("tomllib")  # bench.py needs 3.11; the rest of the suite does not
import bench  # noqa: E402
from runner import command, datasets, markers  # noqa: E402
from runner import scenario as S  # noqa: E402

# (scenario, marker) of every ported section.
PORTED = [("laser", "laser-tables"), ("laser", "laser-tables-epyc"), ("gorgeous", "gorgeous-tables"),
          ("tiered", "tiered-tables"), ("pipeann", "pipeann-tables"), ("pipeann", "pipeann-tables-epyc"),
          ("pipeann", "pipeann-tables-epyc-repeat"), ("pipeann", "pipeann-tables-epyc-repeat2"),
          ("pipeann", "pipeann-tables-epyc-repeat3"),
          ("main", "stratavec-bench-report"),
          ("ab_plan", "ab-plan-20k"), ("ab_plan", "ab-plan-20k-head"), ("ab_plan", "ab-plan-full"),
          ("ab_plan", "ab-plan-mpnet-params"), ("collection", "collection-tables"),
          # No committed rows yet: they regenerate as "not measured yet".
          ("starling", "starling-tables"), ("starling_scale", "starling-scale-tables"), ("updates", "updates"),
          ("filtered", "filtered")]


def minimal(**run):
    return {"name": "t", "run": [{"name": "a", "data": "d", "out": "a.jsonl", **run}]}


def test_unknown_key_is_named():
    with pytest.raises(S.ScenarioError, match="unknown key 'threds'"):
        S.parse(minimal(threds=2))
    with pytest.raises(S.ScenarioError, match="unknown key 'colour'"):
        S.parse({"name": "t", "colour": 1, "run": []})
    with pytest.raises(S.ScenarioError, match=r"report #1: unknown key 'tabel'"):
        S.parse({"name": "t", "report": [{"marker": "m", "table": "laser", "tabel": "x"}]})


def test_missing_key_is_named():
    with pytest.raises(S.ScenarioError, match="missing key 'out'"):
        S.parse({"name": "t", "run": [{"name": "a", "data": "d"}]})
    with pytest.raises(S.ScenarioError, match="missing key 'name'"):
        S.parse({"run": []})
    with pytest.raises(S.ScenarioError, match="missing key 'table'"):
        S.parse({"name": "t", "report": [{"marker": "m"}]})


def test_wrong_kinds_and_collisions():
    with pytest.raises(S.ScenarioError, match="threads = \\[2\\] is not a value"):
        S.parse(minimal(threads=[2]))
    with pytest.raises(S.ScenarioError, match="neither an integer"):
        S.parse(minimal(sweep=["10-20"]))
    with pytest.raises(S.ScenarioError, match="every run writes"):
        S.parse(minimal(each={"threads": [1, 2]}))
    dup = minimal()
    dup["run"].append(dict(dup["run"][0]))
    with pytest.raises(S.ScenarioError, match="second run"):
        S.parse(dup)


def test_sweep_ranges():
    assert S.sweep(["14..=20 step 2", 30]) == [14, 16, 18, 20, 30]
    assert S.sweep(["3..=5"]) == [3, 4, 5]


def test_defaults_each_and_command():
    sc = S.parse({"name": "t", "defaults": {"threads": 2, "peers": ["hnswlib"], "memory_fraction": 0.2},
                  "run": [{"name": "lat", "data": "/d/set", "out": "x-w{beam_width}.jsonl", "peers": [],
                           "each": {"beam_width": [4, 8]}, "profiles": ["diskann", "laser"],
                           "sweep": ["16..=20 step 4", 50], "io": "ram", "device_seconds": 0,
                           "latency": True}]})
    assert [r.out for r in sc.runs] == ["x-w4.jsonl", "x-w8.jsonl"]
    argv = command.argv(sc.runs[1], "res", "/d/set", binary="stratavec")
    # Flags in FLAGS order whatever the file's; the empty peers list drops --peers.
    assert argv == ["stratavec", "bench", "--data", "/d/set", "--work", ".cache/bench", "--out", "res/x-w8.jsonl",
                    "--profiles", "diskann,laser", "--io", "ram", "--threads", "2", "-W", "8", "--latency",
                    "--memory-fraction", "0.2", "-L", "16,20,50", "--device-seconds", "0"]


def test_ported_scripts_commands():
    """The commands laser.sh and gorgeous.sh ran, flag for flag (their step
    4 and 3 loops one command per value)."""
    sc = S.load(str(BENCH / "scenarios" / "gorgeous.toml"))
    budget = [r for r in sc.runs if r.name == "budget"]
    assert [r.out for r in budget] == [f"gorgeous-budget-{f}.jsonl" for f in ("0.05", "0.1", "0.2", "0.4")]
    assert command.argv(budget[0], "benchmarks/results", "M", binary="b")[8:] == [
        "--profiles", "diskann,starling,gorgeous", "--threads", "2", "--memory-fraction", "0.05",
        "-L", ",".join(map(str, list(range(14, 61, 2)) + [70, 80])), "--rounds", "2",
        "--sustained-seconds", "10"]
    sc = S.load(str(BENCH / "scenarios" / "laser.toml"))
    lat = [r for r in sc.runs if r.name == "latency"][0]
    assert " ".join(command.argv(lat, "benchmarks/results", "M", binary="b")) == (
        "b bench --data M --work .cache/bench --out benchmarks/results/laser-768-latency-w4.jsonl "
        "--profiles diskann,laser,laser-wide --threads 1 --in-flight 1 -W 4 --memory-fraction 0.2 "
        "-L 16,20,24,28,32,40,50,60,80,100,150 --rounds 3 --min-pass-seconds 0 "
        "--device-seconds 0 --sustained-seconds 0")


def test_pipeann_commands():
    """pipeann.sh's --ablate came before --profiles, and its grid looped
    threads outside in-flight."""
    sc = S.load(str(BENCH / "scenarios" / "pipeann.toml"))
    abl = [r for r in sc.runs if r.name == "ablation-pca96"][0]
    assert abl.data == ".cache/wordnet-minilm-pca96"
    assert command.argv(abl, "benchmarks/results", "P", binary="b")[8:] == [
        "--ablate", "--profiles", "octopus-bfs", "--threads", "2", "--memory-fraction", "0.2",
        "-L", "10,12,14,16,18,20,25,30,40,60,100", "--rounds", "3", "--device-seconds", "0",
        "--sustained-seconds", "0"]
    grid = [r.out for r in sc.runs if r.name == "grid"]
    assert grid == [f"pipeann-grid-t{t}-q{q}.jsonl" for t in (1, 2) for q in (1, 4, 16)]


def test_derived_data_set_recipe(monkeypatch, tmp_path):
    """The PCA set is made from wordnet-minilm, with the data venv's python
    when there is one."""
    monkeypatch.setenv("STRATAVEC_DATA", str(tmp_path))
    argv = datasets.recipe(".cache/wordnet-minilm-pca96")
    assert argv == ["python3", "benchmarks/datasets/pca.py", "--src", str(tmp_path / "wordnet-minilm"),
                    "--dims", "96", "--out", ".cache/wordnet-minilm-pca96"]
    venv = tmp_path / "venv-minilm" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("")
    (venv / "python").chmod(0o755)
    assert datasets.recipe(".cache/wordnet-minilm-pca96")[0] == str(venv / "python")
    assert datasets.recipe("nope") is None


def test_tiered_figure_link_names_the_plot_written():
    """tables/tiered.py links its figure inside the section; the scenario's
    `plot` must write the file the link names."""
    from tables import tiered
    rep = S.load(str(BENCH / "scenarios" / "tiered.toml")).reports[0]
    assert rep.plot == tiered.PLOT


def test_overrides():
    assert bench.overrides(["profiles=diskann,laser", "sweep=10..=12,20", "rounds=1"]) == {
        "profiles": ["diskann", "laser"], "sweep": [10, 11, 12, 20], "rounds": "1"}
    with pytest.raises(S.ScenarioError, match="--set"):
        bench.overrides(["nope=1"])


def test_set_of_an_each_key_narrows_to_that_expansion():
    sc = S.parse({"name": "t", "run": [
        {"name": "a", "data": "d", "out": "a-{memory_fraction}.jsonl", "each": {"memory_fraction": [0.05, 0.4]}},
        {"name": "b", "data": "d", "out": "b.jsonl", "threads": 2}]})
    kept = bench.narrowed(sc.runs, bench.overrides(["memory_fraction=0.4"]))
    # The 0.05 file is not overwritten with 0.4's rows; a run without the
    # key keeps running with the flag overridden.
    assert [r.out for r in kept] == ["a-0.4.jsonl", "b.jsonl"]
    assert bench.narrowed(sc.runs, {}) == sc.runs
    with pytest.raises(S.ScenarioError, match=r"run a sweeps memory_fraction over \[0.05, 0.4\]"):
        bench.narrowed(sc.runs, bench.overrides(["memory_fraction=0.3"]))


def test_splice_keeps_marker_text_and_neighbours():
    doc = "a\n<!-- BEGIN t: note -->\nold\n<!-- END t -->\n<!-- BEGIN t-x -->\nkeep\n<!-- END t-x -->\n"
    new = markers.splice(doc, "t", "new\n")
    assert new == "a\n<!-- BEGIN t: note -->\n\nnew\n\n<!-- END t -->\n<!-- BEGIN t-x -->\nkeep\n<!-- END t-x -->\n"
    assert markers.section(new, "t") == "new\n"
    with pytest.raises(markers.MarkerError):
        markers.splice(doc, "nope", "x")


@pytest.mark.parametrize("name,marker", PORTED)
def test_ported_sections_regenerate_byte_identical(name, marker, monkeypatch):
    monkeypatch.chdir(ROOT)  # captions quote rows' paths relative to the repository
    sc = S.load(f"benchmarks/scenarios/{name}.toml")
    rep = next(r for r in sc.reports if r.marker == marker)
    doc = Path(rep.doc).read_text()
    assert markers.splice(doc, marker, bench.render(rep)) == doc


def test_report_check_all_is_clean(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert bench.main(["report", "--all", "--check"]) == 0
    assert os.getcwd() == str(ROOT)


def test_command_run_parses_and_expands():
    sc = S.parse({"name": "t", "run": [{"name": "shuffle", "kind": "command", "data": "d",
                                        "argv": ["{bin}", "shuffle", "{work}/idx", "{data}"],
                                        "out": "s.jsonl", "append": True}]})
    r = sc.runs[0]
    assert (r.kind, r.out, r.append) == ("command", "s.jsonl", True)
    argv = command.expand(r.argv, "res", "/data/d")
    assert argv[1:] == ["shuffle", f"{command.WORK}/idx", "/data/d"]
    assert argv[0] == command.bench_binary()


@pytest.mark.parametrize("run,message", [
    ({"argv": ["{nope}"]}, "unknown placeholder"),
    ({"argv": []}, "non-empty list"),
    ({"argv": ["x"], "threads": 2}, "unknown key 'threads'"),
    ({"argv": ["{data}"]}, "gives no data"),
    ({"argv": ["x"], "kind": "shell"}, "runs are"),
    ({"argv": ["x"], "append": "yes"}, "append"),
])
def test_command_run_errors_name_the_key(run, message):
    raw = {"name": "c", "kind": "command", **run}
    with pytest.raises(S.ScenarioError, match=message):
        S.parse({"name": "t", "run": [raw]})


def test_pause_seconds_is_checked():
    assert S.parse(minimal(pause_seconds=5)).runs[0].pause_seconds == 5.0
    with pytest.raises(S.ScenarioError, match="pause_seconds"):
        S.parse(minimal(pause_seconds=-1))


def test_dry_run_prints_a_command_run_with_its_redirect(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    sc = S.parse({"name": "t", "run": [{"name": "c", "kind": "command", "argv": ["{bin}", "info", "x y"],
                                        "out": "o.txt"}]})
    bench.run(sc, dry_run=True, results=str(tmp_path), no_report=True)
    out = capsys.readouterr().out
    assert f"info 'x y' > {tmp_path}/o.txt" in out


def test_command_env_and_creates_expand(capsys, monkeypatch, tmp_path):
    """A driver script's knobs go in `env`; `creates` names its file with
    the placeholders argv uses, and a present one skips the run."""
    monkeypatch.chdir(ROOT)
    sc = S.parse({"name": "t", "run": [
        {"name": "ab", "kind": "command", "argv": ["scripts/x.sh"],
         "env": {"ROUNDS": "8", "OUT": "{results}/ab.jsonl"}},
        {"name": "made", "kind": "command", "argv": ["{bin}", "synth"], "creates": "{results}/gt.ibin"}]})
    assert sc.runs[0].env == {"ROUNDS": "8", "OUT": "{results}/ab.jsonl"}
    (tmp_path / "gt.ibin").write_text("")
    bench.run(sc, dry_run=True, results=str(tmp_path), no_report=True)
    out = capsys.readouterr().out
    assert f"ROUNDS=8 OUT={tmp_path}/ab.jsonl scripts/x.sh\n" in out
    assert f"# made: {tmp_path}/gt.ibin exists, skipped" in out


def test_command_env_runs_in_the_child(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    sc = S.parse({"name": "t", "run": [{"name": "e", "kind": "command", "env": {"STUDY_KNOB": "{results}"},
                                        "argv": [sys.executable, "-c",
                                                 "import os; print(os.environ['STUDY_KNOB'])"],
                                        "out": "knob.txt"}]})
    for r in sc.runs:
        bench.step(r, str(tmp_path), None, None, dry_run=False)
    assert (tmp_path / "knob.txt").read_text() == f"{tmp_path}\n"


@pytest.mark.parametrize("run,message", [
    ({"env": {"A": 1}}, "env must map"),
    ({"env": ["A=1"]}, "env must map"),
    ({"env": {"A": "{nope}"}}, "env A"),
    ({"creates": "{nope}/x"}, "creates"),
    ({"creates": "{data}/gt.ibin"}, "gives no data"),
])
def test_command_env_and_creates_errors(run, message):
    with pytest.raises(S.ScenarioError, match=message):
        S.parse({"name": "t", "run": [{"name": "c", "kind": "command", "argv": ["x"], **run}]})


def test_report_files(monkeypatch):
    """`files` picks the rows a section shows; a table without a files
    parameter refuses them rather than drop them."""
    rep = S.parse({"name": "t", "report": [{"marker": "m", "table": "ab_plan", "files": ["a.jsonl"]}]}).reports[0]
    assert rep.files == ["a.jsonl"]
    for bad in ([], ["x/a.jsonl"], "a.jsonl"):
        with pytest.raises(S.ScenarioError, match="files"):
            S.parse({"name": "t", "report": [{"marker": "m", "table": "ab_plan", "files": bad}]})
    rep = S.Report(marker="m", table="laser", results="benchmarks/results", files=["laser-384.jsonl"])
    with pytest.raises(S.ScenarioError, match="takes no files"):
        bench.render(rep)


def test_twenty_k_subsets_have_recipes():
    assert datasets.recipe("wordnet-minilm-20k") == ["scripts/wordnet.sh", "20k"]
    assert datasets.recipe("wordnet-mpnet-20k") == ["scripts/wordnet-mpnet.sh", "20k"]


def test_starling_commands():
    """The Starling study's old shell commands: its f16 pass as runs of their
    own, BNS appended to the OR(G) lines of the 96-d set, and the 1M
    relayout timed into the results folder."""
    sc = S.load(str(BENCH / "scenarios" / "starling.toml"))
    by = {r.name: r for r in sc.runs}
    assert command.argv(by["pca96-f16"], "benchmarks/results", "P", binary="b")[6:] == [
        "--out", "benchmarks/results/starling-pca96-f16.jsonl",
        "--profiles", "diskann,starling-shuffle,starling-page,starling-nav,starling-pipeline,starling,starling-all",
        "--store", "f16", "--threads", "2", "--memory-fraction", "0.2",
        "-L", "10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,26,30,40,60", "--rounds", "5"]
    assert (by["bns-pca96"].out, by["bns-pca96"].append) == ("shuffle-pca96.jsonl", True)
    assert by["shuffle-384-f16"].argv[2] == "{work}/wordnet-minilm-diskann-R64-L128-pq48-f16"
    assert [r.name for r in sc.runs if r.kind == "bench"] == [
        "pca96", "384", "range-384", "pca96-f16", "384-f16", "range-384-f16"]
    sc = S.load(str(BENCH / "scenarios" / "starling_scale.toml"))
    by = {r.name: r for r in sc.runs}
    assert by["synth-1m"].creates == ".cache/synth-1m-96/gt.ibin"
    assert by["1m"].flags["profiles"] == ["diskann", "starling", "starling-all"]
    relayout = command.expand(by["relayout-1m"].argv, "res", "")
    assert relayout[:4] == ["/usr/bin/time", "-v", "-o", "res/relayout-synth1m.time"]
    assert relayout[5:] == ["relayout", ".cache/bench/synth-1m-96-diskann-R64-L128-pq48",
                            ".cache/bench/relayout-synth1m"]
