//! Names near a name that is not one: what an error about an unknown scenario, check,
//! variant or workload suggests, instead of listing every name there is (the catalogue has
//! over a hundred scenarios; a line naming them all is read by nobody).

/// At most this many names are suggested.
pub const MAX_SUGGESTIONS: usize = 5;

/// The names of `candidates` nearest to `name`, nearest first, at most
/// [`MAX_SUGGESTIONS`]: those that contain it or that it contains (`lock` finds every
/// lock scenario), then those within an edit distance of a third of its length (typos),
/// then those that share its longest prefix. Ties keep the candidates' order.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let name = name.to_ascii_lowercase();
    let typo_distance = (name.chars().count() / 3).max(1);
    // (rank, distance, index): rank 0 contains, 1 typo, 2 shared prefix.
    let mut ranked: Vec<(u8, usize, usize, &str)> = Vec::new();
    for (index, candidate) in candidates.into_iter().enumerate() {
        let lower = candidate.to_ascii_lowercase();
        let distance = edit_distance(&name, &lower);
        let prefix = common_prefix_chars(&name, &lower);
        let rank = if !name.is_empty() && (lower.contains(&name) || name.contains(&lower)) {
            0
        } else if distance <= typo_distance {
            1
        } else if prefix >= 3 {
            2
        } else {
            continue;
        };
        // Within the prefix rank, a longer shared prefix is nearer.
        let closeness = if rank == 2 {
            usize::MAX - prefix
        } else {
            distance
        };
        ranked.push((rank, closeness, index, candidate));
    }
    ranked.sort();
    ranked
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(.., candidate)| candidate)
        .collect()
}

/// What an error about the unknown `name` says it expected: `did you mean `a`, `b`?` and
/// where the full list is (`listed_by`, e.g. "`coordsim list`"), or only where, when
/// nothing is near.
pub fn expected<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    listed_by: &str,
) -> String {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    let near = nearest(name, candidates.iter().copied());
    let all = format!("{listed_by} lists all {}", candidates.len());
    if near.is_empty() {
        format!("expected one of the names {all}")
    } else {
        let near: Vec<String> = near.iter().map(|name| format!("`{name}`")).collect();
        format!("did you mean {}? {all}", near.join(", "))
    }
}

/// serde's "unknown variant `x`, expected one of `a`, `b`, …" (or "unknown field") with a
/// long list cut down to the names nearest `x` ([`expected`]); any other message, or a
/// short list, as it is.
pub fn shorten_serde_message(message: &str) -> String {
    let Some((head, list)) = message.split_once(", expected one of ") else {
        return message.to_string();
    };
    let names: Vec<&str> = list
        .split(", ")
        .map(|name| name.trim_matches('`'))
        .collect();
    let Some(unknown) = head.split('`').nth(1) else {
        return message.to_string();
    };
    if names.len() <= MAX_SUGGESTIONS {
        return message.to_string();
    }
    format!(
        "{head} ({})",
        expected(
            unknown,
            names,
            "the scenario file reference (scenarios/README.md)"
        )
    )
}

fn common_prefix_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// Levenshtein distance, over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, a_char) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, &b_char) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(a_char != b_char);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 7] = [
        "raft_leader_killer",
        "zk_queue_lock",
        "zk_queue_lock_expiry",
        "etcd_mutex",
        "zk_herd_lock",
        "ledger",
        "raft_swarm_3",
    ];

    #[test]
    fn a_part_of_names_finds_them_all() {
        assert_eq!(
            nearest("lock", NAMES),
            ["zk_herd_lock", "zk_queue_lock", "zk_queue_lock_expiry"]
        );
    }

    #[test]
    fn a_typo_finds_the_name() {
        assert_eq!(
            nearest("raft_leadr_killer", NAMES),
            ["raft_leader_killer", "raft_swarm_3"]
        );
        assert_eq!(nearest("legder", NAMES), ["ledger"]);
    }

    #[test]
    fn a_shared_prefix_finds_the_longest_first_and_at_most_five() {
        assert_eq!(
            nearest("raft_swarm_9x", NAMES),
            ["raft_swarm_3", "raft_leader_killer"]
        );
        let many: Vec<String> = (0..20).map(|i| format!("zk_thing_{i}")).collect();
        let near = nearest("zk_thing_xyz", many.iter().map(String::as_str));
        assert_eq!(near.len(), MAX_SUGGESTIONS);
    }

    #[test]
    fn a_long_serde_list_is_cut_to_the_nearest() {
        let message = "unknown variant `zk_queue_lok`, expected one of `kv_mix`, `zk_mix`, \
                       `ledger`, `locks`, `elections`, `discovery`, `pub_sub`";
        assert_eq!(
            shorten_serde_message(message),
            "unknown variant `zk_queue_lok` (did you mean `zk_mix`? the scenario file \
             reference (scenarios/README.md) lists all 7)"
        );
        let short = "unknown variant `x`, expected one of `zab`, `raft`, `ledger`";
        assert_eq!(shorten_serde_message(short), short);
    }

    #[test]
    fn nothing_near_says_where_the_list_is() {
        assert_eq!(
            expected("qqq", NAMES, "`coordsim list`"),
            "expected one of the names `coordsim list` lists all 7"
        );
        assert_eq!(
            expected("legder", NAMES, "`coordsim list`"),
            "did you mean `ledger`? `coordsim list` lists all 7"
        );
    }
}
