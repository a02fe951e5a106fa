//! The `tiered` profile (paper 002 §5): the compact CSR layout built
//! directly equals a relayout of a diskann index, byte for byte; it answers
//! exactly as the diskann index over the same graph does, on every backend
//! (SSD reads widened to pages, and the memory tiers read byte-granular);
//! and it is smaller than the coupled layout.

use crate::common;

use common::*;
use stratavec::data::{DType, Metric};
use stratavec::index::relayout_csr::relayout_csr;
use stratavec::{Backend, BuildParams, Index, OpenOptions};

const N: usize = 2500;
const NQ: usize = 40;
const DIM: usize = 48;

fn params(profile: &str, store: Option<DType>) -> BuildParams {
    BuildParams {
        profile: profile.into(),
        layout: (profile == "tiered").then_some(stratavec::layout::LayoutKind::Csr),
        store,
        ..small_params(Metric::L2)
    }
}

fn open_with(dir: &std::path::Path, io: Backend, budget: Option<u64>) -> Index {
    let opts = OpenOptions {
        io,
        memory_budget_bytes: budget,
        ..Default::default()
    };
    Index::open(dir, &opts).unwrap_or_else(|e| panic!("open {io}: {e}"))
}

#[test]
fn csr_relayout_equals_a_tiered_build_and_answers_as_diskann() {
    let tmp = tempdir();
    let (base, queries) = synth(N, NQ, DIM, 31);
    for store in [None, Some(DType::F16)] {
        let tag = store.map_or("f32".to_string(), |s| s.to_string());
        let d = tmp.path().join(format!("diskann-{tag}"));
        let t = tmp.path().join(format!("tiered-{tag}"));
        let r = tmp.path().join(format!("relayout-{tag}"));
        // One build thread: the graphs are then the same graph.
        build_f32(&d, &base, DIM, &params("diskann", store), 1);
        build_f32(&t, &base, DIM, &params("tiered", store), 1);
        let src = if store.is_some() {
            // From an f32 diskann index to f16 CSR records.
            let d32 = tmp.path().join("diskann-f32");
            relayout_csr(&d32, &r, store).unwrap();
            d32
        } else {
            relayout_csr(&d, &r, None).unwrap();
            d.clone()
        };
        for f in ["pages.bin", "offsets.bin", "codes.bin"] {
            assert!(
                std::fs::read(t.join(f)).unwrap() == std::fs::read(r.join(f)).unwrap(),
                "{tag}: {f} of the relayout of {} differs from the tiered build's",
                src.display()
            );
        }
        let tiered = open(&r);
        assert_eq!(tiered.profile.name, "tiered");
        assert_eq!(tiered.manifest.layout, "csr");
        let (csr, coupled) = (
            std::fs::metadata(t.join("pages.bin")).unwrap().len(),
            std::fs::metadata(d.join("pages.bin")).unwrap().len(),
        );
        assert!(
            (csr as f64) < 0.9 * coupled as f64,
            "{tag}: csr {csr} bytes, coupled {coupled}"
        );

        // The same graph, vectors and codes: the same answers, whatever
        // reads the records (widened to pages or not), with a node cache.
        let want = search(&open(&d), &queries, 10, 40);
        let budget = Some(2_000_000);
        for io in [
            Backend::Auto,
            Backend::Pread,
            Backend::Buffered,
            Backend::Ram,
            Backend::Mmap,
            "simulated:300,20".parse().unwrap(),
        ] {
            let idx = open_with(&t, io, budget);
            assert!(idx.cached_nodes() > 0, "{io}: no node cache");
            let got = search(&idx, &queries, 10, 40);
            assert_eq!(id_lists(&got), id_lists(&want), "{tag} {io}");
            assert_eq!(got.dists, want.dists, "{tag} {io}");
        }
    }
    // Only coupled (diskann) indexes relayout.
    let e = relayout_csr(
        &tmp.path().join("tiered-f32"),
        &tmp.path().join("again"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert_mentions(&e, &["layout", "coupled", "csr"]);
}
