//! The ZooKeeper workloads: the key-value-like mix and its variants (watches, scripts,
//! ephemeral holders, sequential creates, out-of-band reads) and the ZooKeeper recipes' own
//! (barrier, queue, configuration, rendezvous, counter), with the sessions they share.

pub(super) mod double_barrier;
pub(super) mod ephemeral_holders;
pub(super) mod fifo_queue;
pub(super) mod mix;
pub(super) mod out_of_band_reads;
pub(super) mod ready_config;
pub(super) mod rendezvous;
pub(super) mod script;
pub(super) mod sequential_creates;
pub(super) mod sessions;
pub(super) mod shared_counter;
pub(super) mod watches;
