//! The reference of every configuration key: what `lode.toml(5)` is made of
//! (`lode man`), kept in step with the parser by a test that asks the
//! parser (serde's list of accepted keys per table) and compares.
//!
//! ```text
//!  KEYS (section, key, value, default, meaning) ──▶ manual_page() ──▶ lode.toml.5
//!        ▲ the test: every key the parser takes is here, and nothing else
//! ```

/// One configuration key.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The table: "" for the top level, "[[zone]]", "[rrl]", …
    pub section: &'static str,
    /// The key as written.
    pub name: &'static str,
    /// What it takes (an example or the form).
    pub value: &'static str,
    /// Its default ("" when required or none).
    pub default: &'static str,
    /// What it does.
    pub meaning: &'static str,
}

const fn k(
    section: &'static str,
    name: &'static str,
    value: &'static str,
    default: &'static str,
    meaning: &'static str,
) -> Key {
    Key {
        section,
        name,
        value,
        default,
        meaning,
    }
}

/// The sections in the order the manual page gives them, with a sentence each.
pub const SECTIONS: &[(&str, &str)] = &[
    (
        "",
        "Top-level keys: addresses, threads, limits, storage, identity.",
    ),
    (
        "[[zone]]",
        "One table per zone served (Knot's `zone` section).",
    ),
    ("[[key]]", "TSIG keys (`lode keygen NAME` prints one)."),
    (
        "[[acl]]",
        "Access rules, Knot's `acl`: the first rule that matches a request decides; none: denied.",
    ),
    (
        "[[remote]]",
        "Other servers: primaries of secondary zones, targets of NOTIFY.",
    ),
    (
        "[[template]]",
        "Settings of the zones a catalog zone brings (Knot's `template`).",
    ),
    (
        "[[policy]]",
        "Signing policies, Knot's `policy` section (its names and defaults).",
    ),
    (
        "[[submission]]",
        "KSK submission checks, Knot's `submission`: the parent's servers asked for a new KSK's DS.",
    ),
    (
        "[[keystore]]",
        "Where keys are made and kept, Knot's `keystore`: a PKCS #11 token (an HSM). Without one, keys are files in kasp-db.",
    ),
    (
        "[rrl]",
        "Response-rate limiting of UDP answers (Knot's mod-rrl); absent: off.",
    ),
    (
        "[cookies]",
        "DNS cookies (RFC 7873, RFC 9018; Knot's mod-cookies); absent: off.",
    ),
    (
        "[dnstap]",
        "Query logging in dnstap (Knot's mod-dnstap names); absent: off.",
    ),
];

const TIMER_BOUND: &str = "a bound on the SOA timer a secondary follows (seconds; Knot's): the primary's value is kept within [min, max]";

/// Every key the parser takes, by section.
pub const KEYS: &[Key] = &[
    // --- top level
    k("", "listen", "[\"ADDR:PORT\", …]", "127.0.0.1:5300 and [::1]:5300", "Addresses answered on, UDP and TCP; a bare ADDR means port 53."),
    k("", "workers", "N", "one per CPU", "UDP worker threads per address (TCP gets half as many event-loop threads)."),
    k("", "background-workers", "N", "one per CPU", "Threads of the writer pool that applies every zone's changes."),
    k("", "max-udp-payload", "512..4096", "1232", "Largest UDP answer with EDNS, and the size Lode advertises."),
    k("", "udp-receive-buffer", "bytes", "4194304", "Receive buffer asked for each UDP socket (the kernel doubles it; as root beyond net.core.rmem_max); 0: the kernel's net.core.rmem_default."),
    k("", "tcp-idle-timeout", "SECONDS", "10", "A TCP or TLS connection with no complete query for this long is closed."),
    k("", "tcp-max-clients", "N", "1000", "TCP connections at once; when full the idlest is closed for a new one."),
    k("", "tcp-max-clients-per-source", "N", "max(tcp-max-clients/10, 128)", "Connections from one IPv4 address or IPv6 /64; beyond, its idlest is closed."),
    k("", "tcp-io-timeout", "MILLISECONDS", "500", "Time for a begun query to arrive whole (Knot's); answers not read within it stall the connection, which then counts as idle (closed at tcp-idle-timeout, or sooner for a new client)."),
    k("", "listen-tls", "[\"ADDR@PORT\", …]", "none", "DNS over TLS (RFC 7858) addresses; a bare ADDR means port 853."),
    k("", "cert-file", "PATH", "a one-time certificate", "The TLS certificate chain (PEM), the server's first; also `tls-cert`."),
    k("", "tls-cert", "PATH", "", "The same as cert-file."),
    k("", "key-file", "PATH", "kasp-db/tls_key.pem", "Its private key (PEM); without cert-file, the key of the one-time certificate, made when missing; also `tls-key`."),
    k("", "tls-key", "PATH", "", "The same as key-file."),
    k("", "tls-min-version", "\"1.3\" | \"1.2\"", "\"1.3\"", "Lowest TLS version accepted (QUIC is always 1.3)."),
    k("", "tls-handshake-timeout", "MILLISECONDS", "3000", "Time from accept to a finished TLS handshake."),
    k("", "tls-max-clients", "N", "tcp-max-clients", "TLS connections at once (the idlest closed when full)."),
    k("", "listen-quic", "[\"ADDR@PORT\", …]", "none", "DNS over QUIC (RFC 9250) addresses, UDP; a bare ADDR means port 853."),
    k("", "ca-file", "[\"PATH\", …]", "none", "CA certificates (PEM) the `cert-hostname` of remotes are checked with."),
    k("", "listen-xdp", "[\"IFACE@PORT\", …]", "none", "UDP over AF_XDP (Knot's xdp.listen): an XDP program on the interface hands DNS queries (opcode QUERY, IPv4 without options and IPv6 without extension headers, unfragmented) to the port to an AF_XDP socket per receive queue, one worker each, answered as over UDP (RRL, cookies, counters, dnstap); everything else (ARP, TCP, NOTIFY, UPDATE, …) goes on to the kernel, so keep `listen` on the interface's addresses for those. Zero-copy where the driver has it, else copy mode; the program is detached when Lode exits, however it ends. Needs root (CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW); answers larger than the MTU are truncated (TC). A bare IFACE means port 53."),
    k("", "xdp-route-check", "true | false", "false", "Ask the routing table for each XDP answer's way back (Knot's xdp.route-check): an answer that would leave by another interface, or to a next hop not yet resolved, takes the socket path; one to a blackholed, unreachable or prohibited address is dropped; the next hop's MAC is the answer's destination. Needs forwarding on the loopback interface (net.ipv4.conf.lo.forwarding=1, net.ipv6.conf.lo.forwarding=1): the server does not start without it."),
    k("", "xdp-busypoll-budget", "N", "0", "Preferred busy polling of the XDP sockets with this budget (Knot's xdp.busypoll-budget; 0: off; 8-64 recommended): each worker runs the device's receive processing itself, up to N frames a time, and while it keeps polling the kernel leaves it to the worker instead of its own NAPI thread or softirq, so a flood costs the server only the frames it answers (the rest is dropped where it arrives). Needs `napi_defer_hard_irqs` and `gro_flush_timeout` set on the interface (e.g. 2 and 200000 in /sys/class/net/IFACE/): the server warns at start where they are 0. Restart to change."),
    k("", "xdp-busypoll-timeout", "MICROSECONDS", "20", "How long one busy poll may wait for frames (Knot's xdp.busypoll-timeout; 1-65535), with xdp-busypoll-budget."),
    k("", "xdp-fallback", "true | false", "false", "When XDP cannot start on a listen-xdp interface (no privilege, no such interface, no XDP): serve over the sockets alone with an error logged (true), or do not start (false)."),
    k("", "quic-max-clients", "N", "10000", "QUIC connections at once; a new one past it is refused."),
    k("", "quic-idle-close-timeout", "SECONDS", "4", "An idle QUIC connection is closed after this long."),
    k("", "control", "PATH", "/run/lode/lode.sock (root), else /tmp/lode-UID.sock", "The control socket of lode reload, zone-status, …; \"\" for none."),
    k("", "metrics-listen", "ADDR:PORT", "none", "The Prometheus endpoint (GET /metrics); a bare ADDR means port 9153; \"\" for none."),
    k("", "query-counters", "true | false", "true", "Count each request by transport, kind, type, RCODE and zone."),
    k("", "log-level", "error | warn | info | debug | trace", "info", "What is logged."),
    k("", "log-format", "text | json", "text", "Human-readable lines, or one JSON object per line."),
    k("", "user", "USER[:GROUP]", "none", "Started as root: bind the sockets, then run as this user."),
    k("", "snapshot-dir", "PATH", "none", "Start unchanged zones from their binary snapshots (lode snapshot)."),
    k("", "zone", "[[zone]] tables", "", "The zones served (below)."),
    k("", "journal-dir", "PATH", "none", "Where journals, states and timers of zones that change are kept; required by updates, secondaries, signing."),
    k("", "journal-max-usage", "BYTES", "104857600", "Journal size per zone that asks for a flush (Knot's default); unset, a zone larger than it flushes only once its journal holds the zone's own size (a flush writes the whole zone)."),
    k("", "journal-max-depth", "N", "20", "Most changesets kept per zone journal (Knot's default)."),
    k("", "zonefile-sync", "-1 | 0 | SECONDS", "0 (-1 above 100,000 records)", "When zones that take updates write their files: never, after each change, or at most every N seconds."),
    k("", "key", "[[key]] tables", "", "TSIG keys (below)."),
    k("", "acl", "[[acl]] tables", "", "Access rules (below)."),
    k("", "remote", "[[remote]] tables", "", "Other servers (below)."),
    k("", "transfers-out", "N", "10", "Outgoing zone transfers at once."),
    k("", "template", "[[template]] tables", "", "Catalog member settings (below)."),
    k("", "identity", "TEXT", "the host name", "CH TXT id.server / hostname.bind; \"\" answers REFUSED."),
    k("", "version", "TEXT", "\"Lode VERSION\"", "CH TXT version.server / version.bind; \"\" answers REFUSED."),
    k("", "nsid", "TEXT | 0xHEX", "the host name", "RFC 5001 NSID; \"\" for none."),
    k("", "edns-padding", "true | false", "true", "Pad TCP answers to padded queries to 468-byte blocks (RFC 7830; always on TLS and QUIC)."),
    k("", "cookies", "[cookies] table", "", "DNS cookies (below)."),
    k("", "rrl", "[rrl] table", "", "Response-rate limiting (below)."),
    k("", "dnstap", "[dnstap] table", "", "Query logging (below)."),
    k("", "kasp-db", "PATH", "journal-dir/keys", "The signing keys (one folder per zone) and the TLS key."),
    k("", "policy", "[[policy]] tables", "", "Signing policies (below)."),
    k("", "submission", "[[submission]] tables", "", "KSK submission checks (below)."),
    k("", "keystore", "[[keystore]] tables", "", "PKCS #11 tokens keys are made and kept in (below)."),
    // --- [[zone]]
    k("[[zone]]", "name", "NAME", "", "The zone's origin (required)."),
    k("[[zone]]", "file", "PATH", "none (a secondary)", "Its zone file, relative to the configuration's folder; a secondary's (with master) is written from its transfers per zonefile-sync, never read."),
    k("[[zone]]", "master", "[\"REMOTE-ID\", …]", "none", "Its primaries: the zone is a secondary, transferred from them; also `primary`."),
    k("[[zone]]", "primary", "[\"REMOTE-ID\", …]", "", "The same as master."),
    k("[[zone]]", "catalog-role", "generate | interpret", "none", "A catalog zone (RFC 9432) made from the zones that name it, or read from a primary to serve its members."),
    k("[[zone]]", "catalog-zone", "NAME", "none", "The generated catalog this zone is a member of."),
    k("[[zone]]", "catalog-group", "TEXT", "none", "Its group in that catalog."),
    k("[[zone]]", "catalog-template", "[\"TEMPLATE-ID\", …]", "none", "For an interpreted catalog: the templates its members' groups select."),
    k("[[zone]]", "refresh-min-interval", "SECONDS", "2", TIMER_BOUND),
    k("[[zone]]", "refresh-max-interval", "SECONDS", "604800", TIMER_BOUND),
    k("[[zone]]", "retry-min-interval", "SECONDS", "2", TIMER_BOUND),
    k("[[zone]]", "retry-max-interval", "SECONDS", "604800", TIMER_BOUND),
    k("[[zone]]", "expire-min-interval", "SECONDS", "3", TIMER_BOUND),
    k("[[zone]]", "expire-max-interval", "SECONDS", "2419200", TIMER_BOUND),
    k("[[zone]]", "acl", "[\"ACL-ID\", …]", "none", "The rules for updates, transfers and NOTIFY to this zone."),
    k("[[zone]]", "serial-policy", "increment | unixtime | dateserial", "increment", "How the serial rises on a change."),
    k("[[zone]]", "zonefile-sync", "-1 | 0 | SECONDS", "the top-level value", "The top-level zonefile-sync for this zone."),
    k("[[zone]]", "notify", "[\"REMOTE-ID\", …]", "none", "Remotes sent NOTIFY after each change."),
    k("[[zone]]", "notify-delay", "SECONDS", "0", "Wait (and coalesce changes) before notifying."),
    k("[[zone]]", "dnssec-signing", "true | false", "false", "Lode signs the zone (needs journal-dir)."),
    k("[[zone]]", "dnssec-policy", "POLICY-ID", "\"default\"", "The [[policy]] it is signed by."),
    k("[[zone]]", "dnssec-validation", "true | false", "false", "Each new version (signed elsewhere) is verified before it is served."),
    k("[[zone]]", "ds-push", "[REMOTE-ID, …]", "the policy's", "The policy's ds-push for this zone alone."),
    k("[[zone]]", "zonemd-generate", "none | zonemd-sha384 | zonemd-sha512 | remove", "none", "Each new version gets its ZONEMD (RFC 8976, simple scheme; signed when the zone is signed here), or has it removed (needs journal-dir)."),
    k("[[zone]]", "zonemd-verify", "true | false", "false", "A zone file, transfer or UPDATE whose result has no ZONEMD that verifies is refused (an UPDATE with SERVFAIL, as Knot: checked before zonemd-generate makes the next digest); the served version stays."),
    // --- [[key]]
    k("[[key]]", "id", "NAME", "", "The key's name, as requests carry it (required)."),
    k("[[key]]", "algorithm", "hmac-sha256 | hmac-sha512 | …", "", "Its HMAC algorithm (required)."),
    k("[[key]]", "secret", "BASE64", "", "Its secret (required). A reload takes a new secret at once."),
    // --- [[acl]]
    k("[[acl]]", "id", "TEXT", "", "The rule's name, named by zones (required)."),
    k("[[acl]]", "address", "[\"ADDR\" | \"PREFIX\", …]", "any", "Sources it applies to."),
    k("[[acl]]", "key", "[\"KEY-ID\", …]", "none", "TSIG keys one of which must sign the request; absent: only unsigned requests match."),
    k("[[acl]]", "action", "[\"update\" | \"transfer\" | \"notify\", …]", "", "What it allows (or denies)."),
    k("[[acl]]", "protocol", "[\"udp\" | \"tcp\" | \"tls\" | \"quic\", …]", "any", "Transports it applies to (e.g. transfers over TLS only)."),
    k("[[acl]]", "cert-key", "[\"PIN\", …]", "none", "Pins (Base64 SHA-256 of the public key) of client certificates it takes over TLS."),
    k("[[acl]]", "deny", "true | false", "false", "A match denies."),
    // --- [[remote]]
    k("[[remote]]", "id", "TEXT", "", "The remote's name (required)."),
    k("[[remote]]", "address", "[\"ADDR@PORT\" | \"ADDR:PORT\" | \"ADDR\", …]", "", "Its addresses (port 53 by default; required)."),
    k("[[remote]]", "key", "KEY-ID", "none", "The TSIG key for what goes to it."),
    k("[[remote]]", "via", "[\"ADDR\", …]", "none", "Local addresses SOA queries, transfers, NOTIFY and forwarded UPDATEs to it leave from: the first of its address's family (Knot's via)."),
    k("[[remote]]", "tls", "true | false", "false", "SOA queries and transfers from it over TLS (RFC 9103)."),
    k("[[remote]]", "cert-key", "[\"PIN\", …]", "none", "Pins of its certificate's key; implies tls (without pins or names: opportunistic TLS)."),
    k("[[remote]]", "cert-hostname", "[\"NAME\", …]", "none", "Names one of which its certificate, issued by a CA of ca-file, must have; implies tls."),
    // --- [[template]]
    k("[[template]]", "id", "TEXT", "", "The template's name: the catalog group it serves (required)."),
    k("[[template]]", "master", "[\"REMOTE-ID\", …]", "the catalog's", "The members' primaries; also `primary`."),
    k("[[template]]", "primary", "[\"REMOTE-ID\", …]", "", "The same as master."),
    k("[[template]]", "acl", "[\"ACL-ID\", …]", "none", "The members' rules."),
    k("[[template]]", "notify", "[\"REMOTE-ID\", …]", "none", "Remotes the members NOTIFY."),
    k("[[template]]", "refresh-min-interval", "SECONDS", "2", TIMER_BOUND),
    k("[[template]]", "refresh-max-interval", "SECONDS", "604800", TIMER_BOUND),
    k("[[template]]", "retry-min-interval", "SECONDS", "2", TIMER_BOUND),
    k("[[template]]", "retry-max-interval", "SECONDS", "604800", TIMER_BOUND),
    k("[[template]]", "expire-min-interval", "SECONDS", "3", TIMER_BOUND),
    k("[[template]]", "expire-max-interval", "SECONDS", "2419200", TIMER_BOUND),
    k("[[template]]", "dnssec-signing", "true | false", "false", "The members are signed here."),
    k("[[template]]", "dnssec-policy", "POLICY-ID", "\"default\"", "The [[policy]] they are signed by."),
    k("[[template]]", "dnssec-validation", "true | false", "false", "Each new version of a member is verified first."),
    k("[[template]]", "zonemd-generate", "none | zonemd-sha384 | zonemd-sha512 | remove", "none", "Each new version of a member gets its ZONEMD, or has it removed (needs journal-dir)."),
    k("[[template]]", "zonemd-verify", "true | false", "false", "A member's transfer whose ZONEMD is missing or wrong is refused; the served version stays."),
    // --- [[policy]]
    k("[[policy]]", "id", "TEXT", "", "The policy's name; \"default\" is Knot's default policy (required)."),
    k("[[policy]]", "algorithm", "ecdsap256sha256 | ecdsap384sha384 | ed25519 | rsasha256", "ecdsap256sha256", "The keys' algorithm (13, 14, 15 or 8)."),
    k("[[policy]]", "ksk-size", "BITS", "the algorithm's (RSA: 2048)", "Key size of a new KSK."),
    k("[[policy]]", "zsk-size", "BITS", "the algorithm's (RSA: 2048)", "Key size of a new ZSK."),
    k("[[policy]]", "single-type-signing", "true | false", "false", "One key (CSK) signs everything."),
    k("[[policy]]", "dnskey-ttl", "SECONDS", "the SOA's TTL", "TTL of the DNSKEY RRset."),
    k("[[policy]]", "zone-max-ttl", "SECONDS", "the zone's largest", "The largest TTL a rollover step waits for (caches of old signatures)."),
    k("[[policy]]", "propagation-delay", "SECONDS", "3600", "Added to each rollover step: time for every secondary to serve a change."),
    k("[[policy]]", "zsk-lifetime", "SECONDS", "2592000", "From a ZSK's activation to its automatic rollover (30 days; 0: never)."),
    k("[[policy]]", "ksk-lifetime", "SECONDS", "0", "From a KSK's (or CSK's) creation to its automatic rollover (0: never)."),
    k("[[policy]]", "delete-delay", "SECONDS", "0", "A key removed from the zone has its file deleted this long after."),
    k("[[policy]]", "cds-cdnskey-publish", "none | delete-dnssec | rollover | always | double-ds", "rollover", "CDS/CDNSKEY at the apex (rollover: for a KSK waiting for its DS)."),
    k("[[policy]]", "cds-digest-type", "sha256 | sha384", "sha256", "The digest of published CDS records."),
    k("[[policy]]", "ksk-submission", "SUBMISSION-ID", "", "A [[submission]]: a ready KSK becomes active once every parent server serves its DS (else `lode zone-ksk-submitted`)."),
    k("[[policy]]", "ds-push", "[REMOTE-ID, …]", "", "The parent's primary: when the CDS changes, after propagation-delay, the DS set (the CDS as DS, the DNSKEY TTL) replaces the zone's DS there by UPDATE, TSIG-signed with the remote's key (Knot's ds-push); retried every 10 minutes until it is taken."),
    k("[[policy]]", "keystore", "KEYSTORE-ID", "", "A [[keystore]]: the policy's new keys are made in its token and sign there; their files name the token and the key instead of holding it (default: key files)."),
    // --- [[keystore]]
    k("[[keystore]]", "id", "TEXT", "", "The keystore's name, referred to by policies (required)."),
    k("[[keystore]]", "backend", "pkcs11", "", "PKCS #11 (required; keys in files need no keystore)."),
    k("[[keystore]]", "config", "\"pkcs11:token=LABEL;pin-source=FILE MODULE\"", "", "The token's PKCS #11 URI and the module's path (Knot's form). The PIN from a file (pin-source=/path) or an environment variable (pin-source=env:NAME); pin-value is refused (no PIN in the configuration)."),
    // --- [[submission]]
    k("[[submission]]", "id", "TEXT", "", "The submission's name, referred to by policies (required)."),
    k("[[submission]]", "parent", "[REMOTE-ID, ...]", "", "The parent's servers ([[remote]] ids; each address asked, with its key and TLS)."),
    k("[[submission]]", "check-interval", "SECONDS", "3600", "How often they are asked while a KSK waits for its DS."),
    k("[[submission]]", "timeout", "SECONDS", "0", "The KSK becomes active this long after it is ready anyway (0: never)."),
    k("[[submission]]", "parent-delay", "SECONDS", "0", "Added to the DS TTL before the old KSK leaves."),
    k("[[policy]]", "rrsig-lifetime", "SECONDS", "1209600", "Validity of a new signature (14 days)."),
    k("[[policy]]", "rrsig-refresh", "SECONDS", "604800", "A signature is made again this long before it expires (7 days)."),
    k("[[policy]]", "rrsig-pre-refresh", "SECONDS", "3600", "Accepted (signatures are refreshed in spread batches anyway)."),
    k("[[policy]]", "nsec3", "true | false", "false", "NSEC3 (RFC 5155) instead of NSEC."),
    k("[[policy]]", "nsec3-iterations", "N", "0", "Extra hash iterations (RFC 9276: 0; above 500 refused)."),
    k("[[policy]]", "nsec3-salt-length", "BYTES", "0", "Random salt (RFC 9276: 0)."),
    k("[[policy]]", "nsec3-salt-lifetime", "SECONDS", "2592000", "A salt is replaced by a new random one this long after it was made, the NSEC3 chain made anew in one version (30 days; 0: never; nothing to replace with salt length 0)."),
    k("[[policy]]", "nsec3-opt-out", "true | false", "false", "Insecure delegations get no NSEC3."),
    k("[[policy]]", "signing-threads", "N", "one per CPU", "Threads of a whole-zone signing."),
    k("[[policy]]", "manual", "true | false", "false", "Keys stay as they are: no automatic key events (the first keys are still made)."),
    k("[[policy]]", "offline-ksk", "true | false", "false", "Offline KSK (Knot's): no KSK here; ZSKs made ahead (lode dnssec pregenerate), the DNSKEY/CDS/CDNSKEY RRsets and their signatures from an imported signed key response (lode dnssec generate-ksr, import-skr); a new ZSK signs the zone whole."),
    k("[[policy]]", "reproducible-signing", "true | false", "false", "RFC 6979 ECDSA: the same data gives the same signature."),
    // --- [rrl]
    k("[rrl]", "rate-limit", "N", "", "Answers per second per (source prefix, answer class, name); 0: off."),
    k("[rrl]", "slip", "N", "1", "Every Nth limited answer goes out truncated (TC); 0 drops all."),
    k("[rrl]", "ipv4-prefix", "BITS", "24", "IPv4 sources grouped by this prefix."),
    k("[rrl]", "ipv6-prefix", "BITS", "56", "IPv6 sources grouped by this prefix."),
    k("[rrl]", "table-size", "N", "393241", "Buckets (8 bytes each)."),
    k("[rrl]", "burst", "N", "rate-limit / 2", "Answers a quiet bucket sends at once."),
    k("[rrl]", "exempt", "[\"PREFIX\", …]", "none", "Never limited; also `whitelist`."),
    k("[rrl]", "whitelist", "[\"PREFIX\", …]", "", "The same as exempt (Knot's name)."),
    k("[rrl]", "log-only", "true | false", "false", "Only log what would be limited."),
    // --- [cookies]
    k("[cookies]", "secret", "32 HEX DIGITS", "random, rotated", "The server secret."),
    k("[cookies]", "secret-lifetime", "SECONDS", "93600", "Rotation period of a random secret (26 h)."),
    k("[cookies]", "badcookie-slip", "N", "1", "Of UDP queries with a bad cookie, 1 in N gets BADCOOKIE."),
    // --- [dnstap]
    k("[dnstap]", "sink", "PATH | \"unix:PATH\"", "", "A file (created anew at start), or a reader's Unix socket (required)."),
    k("[dnstap]", "log-queries", "true | false", "true", "Write AUTH_QUERY messages."),
    k("[dnstap]", "log-responses", "true | false", "true", "Write AUTH_RESPONSE messages."),
    k("[dnstap]", "sample", "N", "1", "Log one query in N (per worker thread)."),
    k("[dnstap]", "queue", "N", "4096", "Events queued per worker thread; beyond, dropped and counted."),
    k("[dnstap]", "identity", "TEXT", "the server's identity", "The dnstap identity; \"\" for none."),
    k("[dnstap]", "version", "TEXT", "the server's version", "The dnstap version; \"\" for none."),
];

/// Escapes text for roff.
fn roff(text: &str) -> String {
    text.replace('\\', "\\\\").replace('-', "\\-")
}

/// `lode.toml(5)`: every key of [`KEYS`], by section, in roff.
pub fn manual_page(version: &str) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        ".TH LODE.TOML 5 \"\" \"lode {}\" \"File Formats\"\n",
        roff(version)
    ));
    s.push_str(".SH NAME\nlode.toml \\- the configuration file of lode(8)\n");
    s.push_str(".SH DESCRIPTION\nA TOML file read by \\fBlode serve \\-\\-config\\fR and again by every \\fBlode reload\\fR (SIGHUP). \
Key names follow Knot DNS where Knot has the setting. Paths are relative to the file's folder. \
\\fBlode check \\-\\-config FILE\\fR checks a file (and the zone files it names) without starting a server. \
A reload adds and removes zones (a zone added starts with its journal, signing and transfers as at a start) and applies keys, ACLs, remotes, NOTIFY targets, TLS certificates, identity, NSID, cookies, RRL, dnstap, the policies of signed zones, signing turned on or off for a zone with a file or a secondary, zone settings, TCP and TLS limits and the log level at once, and names the settings that take effect only at a restart.\n");
    for (section, about) in SECTIONS {
        let title = if section.is_empty() {
            "TOP LEVEL"
        } else {
            section
        };
        s.push_str(&format!(".SH {}\n{}\n", roff(title), roff(about)));
        for key in KEYS.iter().filter(|k| k.section == *section) {
            s.push_str(&format!(
                ".TP\n\\fB{}\\fR = \\fI{}\\fR\n{}",
                roff(key.name),
                roff(key.value),
                roff(key.meaning)
            ));
            if !key.default.is_empty() {
                s.push_str(&format!(" Default: {}.", roff(key.default)));
            }
            s.push('\n');
        }
    }
    s.push_str(".SH SEE ALSO\nlode(8), lode\\-serve(8), knot.conf(5)\n");
    s
}

/// `docs/lode.toml.md`: every key of [`KEYS`], by section, as Markdown
/// tables (the same reference as the manual page, readable from a clone).
pub fn markdown() -> String {
    let cell = |t: &str| t.replace('|', "\\|").replace('\n', " ");
    let mut s = String::from(
        "# lode.toml — the configuration file\n\n\
         <!-- Generated from crates/server/src/config/reference.rs (a test keeps it current: \
         LODE_WRITE_DOCS=1 cargo test -p lode-server reference). -->\n\n\
         Read by `lode serve --config` and again by every `lode reload` (SIGHUP). Key names \
         follow Knot DNS where Knot has the setting; paths are relative to the file's folder. \
         `lode check --config FILE` checks a file (and the zone files it names) without starting \
         a server; `lode import-config knot.conf` converts a Knot configuration. The same \
         reference is the manual page lode.toml(5) (`lode man --out DIR`).\n",
    );
    for (section, about) in SECTIONS {
        let title = if section.is_empty() {
            "Top level"
        } else {
            section
        };
        s.push_str(&format!(
            "\n## {}\n\n{}\n\n| key | value | default | meaning |\n|---|---|---|---|\n",
            cell(title),
            about
        ));
        for key in KEYS.iter().filter(|k| k.section == *section) {
            s.push_str(&format!(
                "| `{}` | `{}` | {} | {} |\n",
                key.name,
                cell(key.value),
                cell(key.default),
                cell(key.meaning)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// `docs/lode.toml.md` is what [`markdown`] makes (written anew with
    /// `LODE_WRITE_DOCS=1`).
    #[test]
    fn the_reference_in_docs_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/lode.toml.md");
        let want = markdown();
        if std::env::var_os("LODE_WRITE_DOCS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/lode.toml.md is not current: LODE_WRITE_DOCS=1 cargo test -p lode-server reference"
        );
    }

    /// The keys serde takes in `section`, from its error for an unknown key.
    fn parser_keys(section: &str) -> BTreeSet<String> {
        let prefix = match section {
            "" => String::new(),
            s if s.starts_with("[[") => format!("{s}\nid = \"x\"\nname = \"x.\"\n"),
            s => format!("{s}\n"),
        };
        let text = format!("{prefix}zz-not-a-key = 1\n");
        let err = toml::from_str::<super::super::ConfigFile>(&text)
            .expect_err("an unknown key is refused")
            .to_string();
        // A table that takes `id` but not `name` (or the reverse) names
        // the one it does not take first: ask again without it.
        let err = if err.contains("unknown field `name`") || err.contains("unknown field `id`") {
            let bad = if err.contains("`name`") { "name" } else { "id" };
            let retry = text.replace(
                &format!("{bad} = \"x{}\"\n", if bad == "name" { "." } else { "" }),
                "",
            );
            toml::from_str::<super::super::ConfigFile>(&retry)
                .expect_err("an unknown key is refused")
                .to_string()
        } else {
            err
        };
        let list = err
            .split("expected one of ")
            .nth(1)
            .unwrap_or_else(|| panic!("{section}: no key list in {err}"));
        list.split(", ")
            .map(|k| k.trim().trim_matches('`').to_string())
            .collect()
    }

    #[test]
    fn every_key_the_parser_takes_is_documented_and_nothing_else() {
        for (section, _) in SECTIONS {
            let parsed = parser_keys(section);
            let documented: BTreeSet<String> = KEYS
                .iter()
                .filter(|k| k.section == *section)
                .map(|k| k.name.to_string())
                .collect();
            assert_eq!(
                parsed, documented,
                "section {section:?}: the parser's keys and lode.toml(5)'s differ"
            );
        }
        assert!(KEYS
            .iter()
            .all(|k| SECTIONS.iter().any(|(s, _)| *s == k.section)));
    }

    #[test]
    fn the_page_has_every_key() {
        let page = manual_page("0.1.0");
        assert!(page.starts_with(".TH LODE.TOML 5"));
        for k in KEYS {
            assert!(
                page.contains(&format!("\\fB{}\\fR", roff(k.name))),
                "{}",
                k.name
            );
        }
    }
}
