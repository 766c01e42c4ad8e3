//! The Wing–Gong search with Lowe's memoization, over one partition.
//!
//! The history is a doubly linked list of call and return entries in time order. The search
//! walks it from the front:
//!
//! 1. At a **call** entry, it tries to linearize that operation next: if the model accepts
//!    it and the pair (set of linearized operations, new state) was never seen before, the
//!    call and its return are unlinked from the list (a "lift", as in Knuth's dancing
//!    links), the choice is pushed on a stack, and the walk restarts from the front.
//! 2. At a **return** entry, the operation it closes has not been linearized although it
//!    returned before every call still ahead in the list: no remaining order can place it,
//!    so the last choice was wrong. Pop it, relink its entries, and try the call entry
//!    after it.
//! 3. An empty list means every operation was linearized: the history is linearizable. An
//!    empty stack at a return entry means no order works: a violation.
//!
//! An observation ([`Model::is_observation`]) accepted where it changes nothing is placed
//! there for good: backtracking past it undoes the choice before it too (it could move to
//! the front of any order that placed it later), so pending no-op observations do not
//! multiply the orders tried.
//!
//! Memoization (Lowe, "Testing for linearizability", 2017) makes the search revisit no
//! (linearized set, state) pair; the set is a bitset whose hash is kept up to date
//! incrementally (Zobrist hashing), so a step costs one model step and one hash probe.
//! Porcupine (Athalye, 2017) is the reference implementation this follows.

use super::{
    Budget,
    model::{Model, Operation},
};
use std::{
    collections::HashMap,
    hash::{BuildHasherDefault, Hash, Hasher},
    time::Instant,
};

/// What the search of one partition found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PartitionResult {
    /// Linearizable.
    Linearizable,
    /// Not linearizable.
    Violation(Deepest),
    /// This budget ran out first.
    BudgetExhausted(Budget),
}

/// The deepest point the search reached: the longest prefix it could linearize and the
/// operation that then could not be placed (it returned before any remaining order worked).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deepest {
    /// The prefix, in linearization order (indexes into the partition).
    pub prefix: Vec<usize>,
    /// The operation whose return forced the search to backtrack from that prefix.
    pub blocked: Option<usize>,
}

/// How much a search may do before giving up with `Unknown`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_steps: u64,
    pub deadline: Option<Instant>,
}

const NIL: u32 = u32::MAX;

/// How a linearized operation came to be where it is on the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    /// One of several places tried: on backtracking, the search tries the next.
    Free,
    /// An observation placed at the first point it changed nothing
    /// ([`Model::is_observation`]): if that fails, every later place fails too.
    Forced,
}

/// splitmix64: a fixed, well-mixed key per operation for Zobrist hashing.
fn zobrist_key(index: usize) -> u64 {
    let mut z = (index as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fixed-seed hasher (FxHash's multiply-rotate): deterministic on every run, and cheap
/// for the already well-mixed keys of the memo.
#[derive(Default, Clone, Copy)]
pub(crate) struct FixedHasher(u64);

impl Hasher for FixedHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }
    fn write_u8(&mut self, value: u8) {
        self.write_u64(u64::from(value));
    }
    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

type FixedBuild = BuildHasherDefault<FixedHasher>;

/// The (linearized set, state) pairs seen, by their combined hash. Every pair lives in two
/// arenas (the sets' words end to end, the states in order) and pairs of one hash are
/// chained by index: one insertion costs no allocation of its own, where a vector per hash
/// and a boxed set per pair made allocating and freeing them most of a search's time.
///
/// A set is stored without its leading all-ones words and its trailing zero words (counted,
/// not kept): the search linearizes operations roughly in time order, so a set is a run of
/// everything before a frontier and a few beyond it. Kept whole, the sets cost n²/64 words
/// over n insertions: about 330 MB for the 51,000 operations on the herd lock's path at 256
/// clients, where most of the check's time went into the kernel zeroing that memory.
struct Memo<State> {
    /// The first pair of each hash.
    heads: HashMap<u64, u32, FixedBuild>,
    /// Per pair: the next pair of the same hash, or `NIL`.
    chain: Vec<u32>,
    /// Per pair: its set as stored, [`StoredSet`].
    sets: Vec<StoredSet>,
    /// The stored sets' words, end to end.
    words: Vec<u64>,
    states: Vec<State>,
}

/// A set in the memo's arena: `full_words` all-ones words, then `len` words from `start` in
/// the arena, then zero words to the set's width. Two sets of one width are equal exactly
/// when their `full_words` and kept words are.
#[derive(Clone, Copy)]
struct StoredSet {
    full_words: usize,
    start: usize,
    len: usize,
}

/// Sets this many words wide or narrower are stored whole. Trimming scans a set's words
/// twice on every insertion; at a width of a few words that scan costs more than it saves
/// (Porcupine's Jepsen logs, about 85 operations a partition: 10% of the check's
/// instructions), and the memory it would save is a few words a pair. Every set of one
/// search has the same width, so a memo stores all its sets one way and equality stays exact.
const STORED_WHOLE_UP_TO_WORDS: usize = 4;

/// The part of `words` a [`StoredSet`] keeps: how many leading words are all ones, and the
/// words after them up to the last that is not zero (all of them, from a narrow set).
fn trimmed(words: &[u64]) -> (usize, &[u64]) {
    if words.len() <= STORED_WHOLE_UP_TO_WORDS {
        return (0, words);
    }
    let full_words = words.iter().take_while(|&&word| word == u64::MAX).count();
    let rest = &words[full_words..];
    let kept = rest.len() - rest.iter().rev().take_while(|&&word| word == 0).count();
    (full_words, &rest[..kept])
}

/// Whether two sets' words are equal. Most memo hits compare a word or two, where the
/// library's `memcmp`, which slices of integers compare with, costs more than the loop.
fn same_words(stored: &[u64], kept: &[u64]) -> bool {
    stored.len() == kept.len() && stored.iter().zip(kept).all(|(a, b)| a == b)
}

impl<State: Clone + Eq> Memo<State> {
    fn new() -> Self {
        Self {
            heads: HashMap::default(),
            chain: Vec::new(),
            sets: Vec::new(),
            words: Vec::new(),
            states: Vec::new(),
        }
    }

    /// Records the pair under `key` and says whether it is new (false: seen before).
    fn insert(&mut self, key: u64, words: &[u64], state: &State) -> bool {
        let index = self.states.len() as u32;
        let head = *self.heads.entry(key).or_insert(index);
        let (full_words, kept) = trimmed(words);
        let mut at = head;
        while at != index && at != NIL {
            let set = self.sets[at as usize];
            let stored = &self.words[set.start..set.start + set.len];
            if set.full_words == full_words
                && same_words(stored, kept)
                && self.states[at as usize] == *state
            {
                return false;
            }
            at = self.chain[at as usize];
        }
        // New: chained in front of the others of its hash (if any).
        self.chain.push(if head == index { NIL } else { head });
        if head != index {
            self.heads.insert(key, index);
        }
        self.sets.push(StoredSet {
            full_words,
            start: self.words.len(),
            len: kept.len(),
        });
        self.words.extend_from_slice(kept);
        self.states.push(state.clone());
        true
    }
}

fn hash_of<T: Hash>(value: &T) -> u64 {
    let mut hasher = FixedHasher::default();
    value.hash(&mut hasher);
    hasher.finish()
}

/// The set of linearized operations, with its Zobrist hash.
struct Linearized {
    words: Vec<u64>,
    hash: u64,
}

impl Linearized {
    fn new(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)],
            hash: 0,
        }
    }
    fn flip(&mut self, index: usize) {
        self.words[index / 64] ^= 1 << (index % 64);
        self.hash ^= zobrist_key(index);
    }
}

/// Searches for a linearization of the operations `partition` (indexes into `history`);
/// returns what it found and the steps it took.
pub(crate) fn search<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    partition: &[usize],
    limits: Limits,
) -> (PartitionResult, u64) {
    let n = partition.len();
    let mut steps = 0;
    if n == 0 {
        return (PartitionResult::Linearizable, steps);
    }
    let operation = |local: usize| &history[partition[local]];

    // Entries: call of local operation i is 2i, its return 2i+1; the head sentinel is 2n.
    let mut order: Vec<u32> = (0..2 * n as u32).collect();
    let time_of = |entry: u32| {
        let op = operation(entry as usize / 2);
        if entry.is_multiple_of(2) {
            op.invoked_at
        } else {
            op.returned_at()
        }
    };
    // Time order; at equal times calls come before returns, so that operations that touch
    // at an instant count as concurrent (as Porcupine does).
    order.sort_by_key(|&entry| (time_of(entry), entry % 2, entry));
    let head = 2 * n as u32;
    let mut next = vec![NIL; 2 * n + 1];
    let mut prev = vec![NIL; 2 * n + 1];
    let mut last = head;
    for &entry in &order {
        next[last as usize] = entry;
        prev[entry as usize] = last;
        last = entry;
    }

    let mut linearized = Linearized::new(n);
    let mut memo: Memo<M::State> = Memo::new();
    let mut state = model.init();
    let observation: Vec<bool> = (0..n)
        .map(|local| {
            let op = operation(local);
            model.is_observation(&op.input, op.output())
        })
        .collect();
    // The choices made: (call entry, state before it, whether it was forced).
    let mut stack: Vec<(u32, M::State, Choice)> = Vec::new();
    let mut deepest = Deepest::default();
    let mut entry = next[head as usize];

    while next[head as usize] != NIL {
        steps += 1;
        if steps > limits.max_steps {
            return (PartitionResult::BudgetExhausted(Budget::Steps), steps);
        }
        if steps % 4096 == 0
            && limits
                .deadline
                .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return (PartitionResult::BudgetExhausted(Budget::Time), steps);
        }
        debug_assert_ne!(entry, NIL, "the walk never runs past a return entry");
        let local = entry as usize / 2;
        if entry.is_multiple_of(2) {
            // (1) A call: try to linearize it now.
            let op = operation(local);
            let accepted = model.step(&state, &op.input, op.output());
            let Some(new_state) = accepted else {
                entry = next[entry as usize];
                continue;
            };
            // An observation that changes nothing here goes here or nowhere
            // (`Model::is_observation`).
            let choice = if observation[local] && new_state == state {
                Choice::Forced
            } else {
                Choice::Free
            };
            linearized.flip(local);
            let key = linearized.hash ^ hash_of(&new_state).rotate_left(17);
            if !memo.insert(key, &linearized.words, &new_state) {
                linearized.flip(local);
                if choice == Choice::Free {
                    entry = next[entry as usize];
                    continue;
                }
                // Placing it here was tried and failed: so does every order from here.
            } else {
                let call = entry as usize;
                let ret = call + 1;
                // Lift the call and its return out of the list.
                next[prev[call] as usize] = next[call];
                prev[next[call] as usize] = prev[call];
                next[prev[ret] as usize] = next[ret];
                if next[ret] != NIL {
                    prev[next[ret] as usize] = prev[ret];
                }
                stack.push((entry, std::mem::replace(&mut state, new_state), choice));
                entry = next[head as usize];
                continue;
            }
        } else if stack.len() > deepest.prefix.len() || deepest.blocked.is_none() {
            // (2) A return: the operation it closes had to be linearized by now.
            deepest.prefix = stack.iter().map(|(call, ..)| *call as usize / 2).collect();
            deepest.blocked = Some(local);
        }
        // Backtrack: undo the last free choice, and the forced ones made after it.
        loop {
            let Some((call_entry, previous_state, choice)) = stack.pop() else {
                return (PartitionResult::Violation(deepest), steps);
            };
            let call = call_entry as usize;
            let ret = call + 1;
            // Relink the return, then the call (the reverse of the lift).
            next[prev[ret] as usize] = ret as u32;
            if next[ret] != NIL {
                prev[next[ret] as usize] = ret as u32;
            }
            next[prev[call] as usize] = call as u32;
            prev[next[call] as usize] = call as u32;
            linearized.flip(call / 2);
            state = previous_state;
            entry = next[call];
            if choice == Choice::Free {
                break;
            }
        }
    }
    (PartitionResult::Linearizable, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The set of the first `count` of `width × 64` operations.
    fn prefix(count: usize, width: usize) -> Vec<u64> {
        let mut set = Linearized::new(width * 64);
        (0..count).for_each(|index| set.flip(index));
        set.words
    }

    #[test]
    fn the_memo_tells_sets_apart_by_their_trimmed_words_and_their_full_run() {
        let mut memo: Memo<u8> = Memo::new();
        // Wider than the sets stored whole.
        let width = STORED_WHOLE_UP_TO_WORDS + 4;
        assert!(memo.insert(1, &prefix(64, width), &0));
        assert!(
            !memo.insert(1, &prefix(64, width), &0),
            "the same set and state"
        );
        assert!(memo.insert(1, &prefix(64, width), &1), "another state");
        // Same hash, sets that differ only in the run of full words or in a kept word.
        assert!(memo.insert(1, &prefix(128, width), &0));
        assert!(memo.insert(1, &prefix(65, width), &0));
        let mut gap = prefix(64, width);
        gap[2] = 1;
        assert!(memo.insert(1, &gap, &0));
        assert!(!memo.insert(1, &gap, &0));
        assert!(memo.insert(1, &vec![0; width], &0), "the empty set");
        assert!(!memo.insert(1, &vec![0; width], &0));
    }

    #[test]
    fn narrow_sets_are_stored_whole_and_told_apart_exactly() {
        let mut memo: Memo<u8> = Memo::new();
        let width = 2;
        for count in [0, 1, 64, 65, 128] {
            assert!(memo.insert(7, &prefix(count, width), &0), "{count} new");
            assert!(!memo.insert(7, &prefix(count, width), &0), "{count} seen");
        }
        let mut gap = prefix(64, width);
        gap[1] = 1 << 9;
        assert!(memo.insert(7, &gap, &0));
        assert!(!memo.insert(7, &gap, &0));
        // Stored whole: as many words as the sets are wide.
        assert_eq!(memo.words.len(), 6 * width);
        assert!(memo.sets.iter().all(|set| set.full_words == 0));
    }

    #[test]
    fn sets_that_grow_in_time_order_keep_only_their_frontier() {
        let (mut memo, width) = (Memo::<u8>::new(), 1_000);
        for count in 0..5_000 {
            assert!(memo.insert(count as u64, &prefix(count, width), &0));
        }
        // Whole, the 5,000 sets would be 5,000,000 words; trimmed, each keeps at most the
        // word its frontier is in.
        assert!(memo.words.len() <= 5_000, "{} words", memo.words.len());
    }
}
