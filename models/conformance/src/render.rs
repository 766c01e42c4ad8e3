//! Shared pieces of rendering an answer (see the README's "Normalisation").

/// A list as the probes write it: `[a,b]`.
pub(crate) fn list<T: AsRef<str>>(items: &[T]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("[{}]", items.join(","))
}
