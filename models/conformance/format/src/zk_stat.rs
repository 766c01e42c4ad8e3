//! A ZooKeeper `Stat` as the probes write it (README, "ZooKeeper verbs" and
//! "Normalisation"): one rendering for the recorder (from `zookeeper-client`'s `Stat`) and the
//! model runner (from the model's), so that they compare exactly.

use crate::Roles;

/// The fields of a ZooKeeper `Stat` a probe shows, in the wire's types. `ctime` and `mtime`
/// are left out: the format has no way to normalise wall times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZkStat {
    /// The create's zxid.
    pub czxid: i64,
    /// The last data change's zxid.
    pub mzxid: i64,
    /// The last change to the children's zxid.
    pub pzxid: i64,
    /// Number of data changes.
    pub version: i32,
    /// Number of changes to the children.
    pub cversion: i32,
    /// Number of ACL changes.
    pub aversion: i32,
    /// The owning session of an ephemeral node, else 0.
    pub ephemeral_owner: i64,
    /// Length of the data.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
}

/// A zxid as `z` and its counter (its low 32 bits: every probe starts a fresh server, so the
/// counter is the number of transactions so far); the epoch is left out. Zero stays `0`.
fn zxid(zxid: i64) -> String {
    match zxid {
        0 => "0".to_string(),
        _ => format!("z{}", zxid & 0xffff_ffff),
    }
}

impl ZkStat {
    /// `stat=(czxid=… mzxid=… pzxid=… version=… cversion=… aversion=… owner=… len=…
    /// children=…)`, the owner by its session's role (`none` for 0).
    pub fn render(&self, sessions: &mut Roles) -> String {
        let owner = match self.ephemeral_owner {
            0 => "none".to_string(),
            id => sessions.name(id),
        };
        format!(
            "stat=(czxid={} mzxid={} pzxid={} version={} cversion={} aversion={} owner={owner} len={} children={})",
            zxid(self.czxid),
            zxid(self.mzxid),
            zxid(self.pzxid),
            self.version,
            self.cversion,
            self.aversion,
            self.data_length,
            self.num_children
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_renders_zxid_counters_and_owner_roles() {
        let mut sessions = Roles::new('s');
        sessions.name(0x0100_0000_0000_0042);
        let stat = ZkStat {
            czxid: (1 << 32) | 3,
            mzxid: (2 << 32) | 7,
            pzxid: 0,
            version: 2,
            cversion: 1,
            aversion: 0,
            ephemeral_owner: 0x0200_0000_0000_0001,
            data_length: 5,
            num_children: 0,
        };
        assert_eq!(
            stat.render(&mut sessions),
            "stat=(czxid=z3 mzxid=z7 pzxid=0 version=2 cversion=1 aversion=0 owner=s2 len=5 children=0)"
        );
        let persistent = ZkStat {
            ephemeral_owner: 0,
            ..stat
        };
        assert!(persistent.render(&mut sessions).contains("owner=none"));
    }
}
