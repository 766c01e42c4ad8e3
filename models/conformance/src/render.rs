//! Shared pieces of rendering an answer (see the README's "Normalisation").

/// A ZooKeeper zxid as the probes write it: `z` and its counter (the low 32 bits); the epoch
/// is left out. Zero stays `0`.
pub(crate) fn zxid(zxid: u64) -> String {
    if zxid == 0 {
        "0".to_string()
    } else {
        format!("z{}", zxid & 0xffff_ffff)
    }
}

/// A list as the probes write it: `[a,b]`.
pub(crate) fn list<T: AsRef<str>>(items: &[T]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("[{}]", items.join(","))
}
