//! Which addresses a webhook may reach: networks ([`Cidr`]) and the [`AddressPolicy`] that
//! refuses loopback, link-local, metadata and other non-public addresses unless listed (see the
//! parent module's header).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IPv4 or IPv6 network (`10.1.0.0/16`, `fd12::/16`); in JSON, that string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `addr/prefix` (a bare address is a /32 or /128).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let net: IpAddr = addr.trim().parse().map_err(|_| format!("{s:?} is not an IP network"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix must be 0-{max}"))?,
        };
        Ok(Cidr { net, prefix })
    }

    /// Whether `ip` lies in the network (an IPv4 network never holds an IPv6 address: mapped
    /// forms are unwrapped by the caller).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl Cidr {
    /// The addresses in both networks, as a network (two CIDRs either nest or are disjoint).
    pub fn intersection(&self, other: &Cidr) -> Option<Cidr> {
        let (wide, narrow) = if self.prefix <= other.prefix { (self, other) } else { (other, self) };
        wide.contains(narrow.net).then_some(*narrow)
    }
}

impl TryFrom<String> for Cidr {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        Cidr::parse(&s)
    }
}

impl From<Cidr> for String {
    fn from(c: Cidr) -> Self {
        c.to_string()
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.net, self.prefix)
    }
}

/// Which addresses a webhook may connect to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Private networks the deployment allows (`SUNDIAL_PRIVATE_TARGET_CIDRS`).
    pub private_cidrs: Vec<Cidr>,
    /// Loopback and plain `http://` allowed: the local run and tests only
    /// (`SUNDIAL_DEV_LOOPBACK_TARGETS`; never set by the CDK).
    pub dev_loopback: bool,
}

impl AddressPolicy {
    /// The policy of the local run and the test suite: loopback and plain `http://` allowed.
    pub fn dev_loopback() -> Self {
        AddressPolicy { private_cidrs: Vec::new(), dev_loopback: true }
    }

    /// Whether a webhook may connect to `ip`.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = unwrap_v4(ip);
        if ip.is_loopback() {
            return self.dev_loopback;
        }
        if always_refused(ip) {
            return false;
        }
        is_public(ip) || self.private_cidrs.iter().any(|c| c.contains(ip))
    }

    /// Whether plain `http://` is allowed (the dev setting only: on a real network a webhook
    /// without TLS can be read and rewritten on the way).
    pub fn allows_plain_http(&self) -> bool {
        self.dev_loopback
    }
}

/// An IPv6 address that embeds an IPv4 one the packets end up at (mapped `::ffff:a.b.c.d`,
/// translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::`,
/// IPv4-compatible `::a.b.c.d`) is judged as that IPv4 address.
pub(super) fn unwrap_v4(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    let seg = v6.segments();
    let v4 =
        |hi: u16, lo: u16| IpAddr::V4(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8));
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    if seg[..4] == [0, 0, 0, 0] && seg[4] == 0xffff && seg[5] == 0 {
        return v4(seg[6], seg[7]); // IPv4-translated ::ffff:0:0:0/96 (RFC 2765)
    }
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        return v4(seg[6], seg[7]); // NAT64 well-known prefix 64:ff9b::/96
    }
    if seg[0] == 0x2002 {
        return v4(seg[1], seg[2]); // 6to4 2002::/16
    }
    if seg[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_unspecified() && !v6.is_loopback() {
        return v4(seg[6], seg[7]); // IPv4-compatible ::/96 (deprecated)
    }
    ip
}

/// Refused whatever the deployment lists: link-local (the metadata service), the EC2 IPv6
/// service addresses, unspecified, multicast, broadcast. (Loopback is handled by the caller.)
fn always_refused(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, ..] = v4.octets();
            a == 0 || v4.is_link_local() || v4.is_multicast() || v4.is_broadcast()
        }
        IpAddr::V6(v6) => {
            let seg = v6.segments();
            v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (seg[0] == 0xfd00 && seg[1] == 0x0ec2) // fd00:ec2::/32 (metadata ::254, DNS ::253, NTP ::123)
        }
    }
}

/// Whether `ip` is a public unicast address a webhook may reach without any allowlist.
pub fn is_public(ip: IpAddr) -> bool {
    match unwrap_v4(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0                                   // "this network", 0.0.0.0
        || ip.is_loopback()                    // 127/8
        || ip.is_private()                     // 10/8, 172.16/12, 192.168/16
        || ip.is_link_local()                  // 169.254/16 (instance metadata)
        || (a == 100 && (64..128).contains(&b)) // 100.64/10 shared address space
        || (a == 192 && b == 0 && c == 0)      // 192.0.0/24 protocol assignments
        || (a == 192 && b == 0 && c == 2)      // documentation
        || (a == 192 && b == 88 && c == 99)    // 6to4 relay anycast (deprecated, RFC 7526)
        || (a == 198 && (b == 18 || b == 19))  // benchmarking
        || (a == 198 && b == 51 && c == 100)   // documentation
        || (a == 203 && b == 0 && c == 113)    // documentation
        || ip.is_multicast()                   // 224/4
        || a >= 240) // reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00   // unique local fc00::/7
        || (seg[0] & 0xffc0) == 0xfe80   // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0   // site-local fec0::/10 (deprecated, still routed inside some networks)
        || (seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1) // local-use NAT64 64:ff9b:1::/48 (RFC 8215)
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x0100 && seg[1..4] == [0, 0, 0]) // discard-only 100::/64
        || seg[0..6] == [0, 0, 0, 0, 0, 0]) // ::/96 not unwrapped above
}
