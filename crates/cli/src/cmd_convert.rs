use anyhow::{bail, Result};
use std::path::PathBuf;
use stratavec::data::{self, Elems};

#[derive(clap::Args)]
pub struct Args {
    /// Input vector file.
    input: PathBuf,
    /// Output file; its extension picks the format (.fbin, .u8bin, .i8bin,
    /// .fvecs, .bvecs, .npy).
    output: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    let f = data::open(&a.input)?;
    let (n, d) = (f.n(), f.dim());
    let ext = a.output.extension().and_then(|e| e.to_str()).unwrap_or("");
    let vectors = f.vectors();
    let elems = vectors.map(|v| v.elems());
    match (ext, elems) {
        ("fbin", _) => data::write_fbin(&a.output, n, d, &f.to_f32_vec())?,
        ("fvecs", _) => data::write_fvecs(&a.output, n, d, &f.to_f32_vec())?,
        ("npy", Some(Elems::U8(v))) => data::write_npy_u8(&a.output, n, d, v)?,
        ("npy", Some(Elems::I8(v))) => data::write_npy_i8(&a.output, n, d, v)?,
        ("npy", _) => data::write_npy_f32(&a.output, n, d, &f.to_f32_vec())?,
        ("u8bin", Some(Elems::U8(v))) => data::write_u8bin(&a.output, n, d, v)?,
        ("bvecs", Some(Elems::U8(v))) => data::write_bvecs(&a.output, n, d, v)?,
        ("i8bin", Some(Elems::I8(v))) => data::write_i8bin(&a.output, n, d, v)?,
        ("u8bin" | "bvecs" | "i8bin", _) => bail!(
            "{}: element type: expected data of the output's type ({ext}), found {} (no lossy conversion)",
            a.input.display(),
            f.dtype().as_str()
        ),
        _ => bail!(
            "{}: extension: expected fbin, u8bin, i8bin, fvecs, bvecs or npy, found {ext:?}",
            a.output.display()
        ),
    }
    eprintln!("wrote {} ({n} x {d})", a.output.display());
    Ok(())
}
