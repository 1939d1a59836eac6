//! Differential run on a TLD-shaped zone signed with NSEC3 opt-out: Knot DNS
//! 3.2 and Lode serve the same signed zone, get the same few thousand
//! queries (referrals, glue, names below cuts, NXDOMAIN and no-DS proofs, DS
//! at the parent, apex queries, answers larger than 1232 octets) over UDP and
//! TCP, and must answer alike (compared by `common/compare.rs`, as in
//! tests/differential.rs).
//!
//! ```text
//! lode-bench gen tld (N delegations) ─┐
//! + sibling-glue and 13-server cuts ──┴─▶ kzonesign (NSEC3 opt-out) ─┬─▶ knotd ──────┐
//!                                                                    └─▶ lode serve ─┤
//! cases picked from the model (seeded) + the generator's query files ─▶ UDP, TCP ─▶ compare
//! ```
//!
//! The zone is signed once, offline, by Knot's own signer (kzonesign: ECDSA
//! P-256, NSEC3 with opt-out, no salt, 0 iterations) and served as plain
//! data by both servers, as the small signed zones of the suite are.
//!
//! Environment: `LODE_TLD_DELEGATIONS=N` (default 100,000; 1,000,000 is the
//! TLD issue's size: run that with `--release`), `LODE_DIFF_PEER=knot`
//! (knotd against a second knotd: proves the harness), `LODE_DIFF_FILTER=TEXT`
//! (only the cases whose line or kind contains TEXT), `LODE_DIFF_VERBOSE=1`,
//! `LODE_REQUIRE_KNOT=1` (a missing knotd or kzonesign fails instead of
//! skipping), `LODE_KEEP_TMP=1` (keeps the zones).

mod common;

use common::compare::*;
use common::*;
use lode_bench::gen::tld::{generate, Servers, TldModel, TldSpec, QUERY_FILES};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The zone's apex.
const TLD: &str = "com.";
/// Seed of the generator and of the choice of cases.
const SEED: u64 = 0x71dd_1ff0;
/// Delegations unless `LODE_TLD_DELEGATIONS` says otherwise.
const DEFAULT_DELEGATIONS: u64 = 100_000;
/// Delegations of each kind the cases are picked from.
const SAMPLE: usize = 300;
/// Delegations whose servers are below other delegations (sibling glue).
const SIBLINGS: u64 = 200;
/// Lines of each of the generator's query files.
const FILE_QUERIES: u64 = 500;
/// Mismatches printed in full (the rest are counted).
const SHOW: usize = 40;

fn delegations() -> u64 {
    match std::env::var("LODE_TLD_DELEGATIONS") {
        Ok(v) => v
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("LODE_TLD_DELEGATIONS={v}: {e}")),
        Err(_) => DEFAULT_DELEGATIONS,
    }
}

/// The delegations of the generated zone by kind (indexes into the model).
#[derive(Debug, Default)]
struct Kinds {
    signed: Vec<u64>,
    unsigned: Vec<u64>,
    glue: Vec<u64>,
    provider: Vec<u64>,
}

fn kinds(m: &TldModel) -> Kinds {
    let mut k = Kinds::default();
    for i in 0..m.delegations() {
        let d = m.delegation(i);
        if d.ds.is_some() {
            k.signed.push(i);
        } else {
            k.unsigned.push(i);
        }
        match d.servers {
            Servers::InBailiwick { .. } => k.glue.push(i),
            Servers::Provider(_) => k.provider.push(i),
        }
    }
    k
}

/// The absolute name of delegation `i`.
fn fqdn(m: &TldModel, i: u64) -> String {
    let mut b = Vec::new();
    m.push_label(i, &mut b);
    format!("{}.{TLD}", String::from_utf8_lossy(&b))
}

/// The absolute name of server `n` (1-based, at most its count) of delegation `i`.
fn server(m: &TldModel, i: u64, n: u8) -> String {
    let d = m.delegation(i);
    let mut b = Vec::new();
    m.push_server(i, &d, n.min(d.ns_count), &mut b);
    String::from_utf8_lossy(&b).into_owned()
}

/// `n` distinct entries of `v` (all of them when it is shorter), in a seeded order.
fn sample(rng: &mut Rng, v: &[u64], n: usize) -> Vec<u64> {
    let mut v = v.to_vec();
    let n = n.min(v.len());
    for k in 0..n {
        let j = k + rng.below(v.len() - k);
        v.swap(k, j);
    }
    v.truncate(n);
    v
}

/// A DS RDATA with a digest from `rng`.
fn ds_rdata(rng: &mut Rng, tag: u64) -> String {
    let digest: String = (0..4).map(|_| format!("{:016X}", rng.next_u64())).collect();
    format!("{tag} 13 2 {digest}")
}

/// What the test adds to the generated zone (the generator's servers are
/// either in-bailiwick of their own delegation or out of zone): delegations
/// `sib-K` whose servers are below other delegations of the zone (sibling
/// glue, names below a cut without address records, the apex's own
/// servers), `big-0`/`big-1` with 13 servers each whose glue (one A,
/// two AAAA per server) does not fit in 1232 octets, and delegations one
/// level down below empty non-terminals `ent-K` (a registry's second-level
/// domains): with opt-out, an empty non-terminal above unsigned delegations
/// only has no NSEC3 of its own. Labels with a hyphen and digits are never
/// generated, so none of them clashes.
struct Extras {
    text: String,
    /// The `sib-K` names, and whether each has a DS.
    siblings: Vec<(String, bool)>,
    /// Server names of the `sib-K` delegations.
    sibling_servers: Vec<String>,
    big: Vec<String>,
    /// The delegations below `ent-K`.
    below_ents: Vec<String>,
}

fn extras(m: &TldModel, k: &Kinds, rng: &mut Rng) -> Extras {
    let mut x = Extras {
        text: String::from("; added by tests/tld_differential.rs\n"),
        siblings: Vec::new(),
        sibling_servers: Vec::new(),
        big: Vec::new(),
        below_ents: Vec::new(),
    };
    let glue = |rng: &mut Rng| k.glue[rng.below(k.glue.len())];
    for s in 0..SIBLINGS {
        let name = format!("sib-{s}.{TLD}");
        let (g1, g2) = (glue(rng), glue(rng));
        let servers = match s % 5 {
            0 => vec![server(m, g1, 1), server(m, g2, 2)],
            1 => {
                let own = format!("ns1.{name}");
                let _ = writeln!(x.text, "{own} A 192.0.2.{}", s % 250 + 1);
                vec![own, server(m, g1, 2)]
            }
            2 => {
                let p = k.provider[rng.below(k.provider.len())];
                vec![server(m, g1, 1), format!("ns1.{}", fqdn(m, p))]
            }
            3 => vec![server(m, g1, 4), format!("a.nic.{TLD}")],
            _ => vec![format!("ns9.{}", fqdn(m, g1)), "ns1.example.net.".into()],
        };
        for sv in &servers {
            let _ = writeln!(x.text, "{name} NS {sv}");
        }
        let signed = s % 3 == 0;
        if signed {
            let _ = writeln!(x.text, "{name} 86400 DS {}", ds_rdata(rng, 1000 + s));
        }
        x.sibling_servers.extend(servers);
        x.siblings.push((name, signed));
    }
    for b in 0..2u64 {
        let name = format!("big-{b}.{TLD}");
        for n in 1..=13 {
            let _ = writeln!(
                x.text,
                "{name} NS ns{n}.{name}\nns{n}.{name} A 198.51.100.{n}\n\
                 ns{n}.{name} AAAA 2001:db8::{n}\nns{n}.{name} AAAA 2001:db8:1::{n}"
            );
        }
        if b == 1 {
            let _ = writeln!(x.text, "{name} 86400 DS {}", ds_rdata(rng, 2000 + b));
        }
        x.big.push(name);
    }
    // ent-0: three unsigned delegations below; ent-1: one unsigned, one signed; ent-2: one signed.
    for (e, signed) in [
        (0, &[false, false, false][..]),
        (1, &[false, true]),
        (2, &[true]),
    ] {
        for (d, &has_ds) in signed.iter().enumerate() {
            let name = format!("d{}.ent-{e}.{TLD}", d + 1);
            let _ = writeln!(
                x.text,
                "{name} NS ns1.example.net.\n{name} NS ns2.example.org."
            );
            if has_ds {
                let _ = writeln!(x.text, "{name} 86400 DS {}", ds_rdata(rng, 3000 + e));
            }
            x.below_ents.push(name);
        }
    }
    x
}

/// Signs `unsigned` with kzonesign (NSEC3 opt-out, no salt, 0 iterations,
/// ECDSA P-256, keys made on the spot); returns the signed zone file.
fn sign(signer: &str, dir: &Path, unsigned: &Path) -> PathBuf {
    let d = dir.display();
    let conf = dir.join("sign.conf");
    let text = format!(
        "server:\n    rundir: \"{d}\"\ndatabase:\n    storage: \"{d}\"\n\
         policy:\n  - id: tld\n    algorithm: ecdsap256sha256\n    nsec3: on\n    nsec3-opt-out: on\n\
         \x20   nsec3-iterations: 0\n    nsec3-salt-length: 0\n    signing-threads: 2\n\
         template:\n  - id: default\n    storage: \"{d}\"\n\
         zone:\n  - domain: {TLD}\n    file: \"{}\"\n    dnssec-signing: on\n    dnssec-policy: tld\n",
        unsigned.display()
    );
    std::fs::write(&conf, text).expect("write sign.conf");
    let out = dir.join("signed");
    let run = Command::new(signer)
        .arg("-c")
        .arg(&conf)
        .arg("-o")
        .arg(&out)
        .arg(TLD)
        .output()
        .expect("run kzonesign");
    assert!(
        run.status.success(),
        "kzonesign failed:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    out.join(format!("{TLD}zone"))
}

/// The NSEC3 owner names of the signed zone; checks on the way that the
/// chain is opt-out, unsalted and of 0 iterations (what the test claims).
fn nsec3_owners(signed: &Path) -> Vec<String> {
    let f = std::fs::File::open(signed).expect("open the signed zone");
    let mut owners = Vec::new();
    let mut param = None;
    for line in std::io::BufReader::new(f).lines() {
        let line = line.expect("read the signed zone");
        if line.starts_with(';') {
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.get(2).copied() {
            Some("NSEC3") => {
                assert_eq!(
                    w[3..6],
                    ["1", "1", "0"],
                    "not an opt-out NSEC3 of 0 iterations: {line}"
                );
                assert_eq!(w[6], "-", "salted NSEC3: {line}");
                owners.push(w[0].to_string());
            }
            Some("NSEC3PARAM") => param = Some(w[3..].join(" ")),
            _ => {}
        }
    }
    assert_eq!(param.as_deref(), Some("1 0 0 -"), "NSEC3PARAM");
    owners
}

/// The cases, each with its kind.
struct Cases {
    list: Vec<(&'static str, Case)>,
    filter: Option<String>,
}

impl Cases {
    fn add(&mut self, kind: &'static str, line: &str) {
        if let Some(f) = &self.filter {
            if !line.contains(f.as_str()) && !kind.contains(f.as_str()) {
                return;
            }
        }
        let n = self.list.len();
        let case = Case::parse(line, format!("tld {kind} #{n}"), n as u16)
            .unwrap_or_else(|e| panic!("case `{line}`: {e}"));
        self.list.push((kind, case));
    }

    /// `line` once without and once with DO.
    fn both(&mut self, kind: &'static str, line: &str) {
        self.add(kind, line);
        self.add(kind, &format!("{line} +do"));
    }
}

/// Some names in capitals, to check that both keep the question's case.
fn spell(rng: &mut Rng, name: String) -> String {
    if rng.below(8) == 0 {
        name.to_uppercase()
    } else {
        name
    }
}

/// Query types of referral cases, in turn.
const REFERRAL_TYPES: [&str; 8] = ["A", "NS", "AAAA", "MX", "DNSKEY", "ANY", "RRSIG", "TXT"];

fn cases(
    m: &TldModel,
    k: &Kinds,
    x: &Extras,
    nsec3: &[String],
    query_files: &[PathBuf],
    rng: &mut Rng,
) -> Cases {
    let mut c = Cases {
        list: Vec::new(),
        filter: std::env::var("LODE_DIFF_FILTER").ok(),
    };
    // Referrals, to delegations with and without DS, at the cut and below it.
    for (kind, from) in [("referral-ds", &k.signed), ("referral-no-ds", &k.unsigned)] {
        for (j, i) in sample(rng, from, SAMPLE).into_iter().enumerate() {
            let name = fqdn(m, i);
            let qname = match j % 3 {
                0 => name,
                1 => format!("www.{name}"),
                _ => format!("m.x.{name}"),
            };
            let qname = spell(rng, qname);
            c.both(
                kind,
                &format!("{qname} {}", REFERRAL_TYPES[j % REFERRAL_TYPES.len()]),
            );
        }
    }
    // In-bailiwick glue: referrals that carry it, and its own names asked for.
    for (j, i) in sample(rng, &k.glue, SAMPLE).into_iter().enumerate() {
        let name = spell(rng, fqdn(m, i));
        let count = m.delegation(i).ns_count;
        c.both("glue", &format!("{name} NS"));
        c.add("glue", &format!("{} A", server(m, i, 1)));
        let t = if j % 2 == 0 { "AAAA" } else { "ANY" };
        c.add("glue", &format!("{} {t} +do", server(m, i, count)));
    }
    // Sibling glue: servers below other delegations of the zone.
    for (j, (name, _)) in x.siblings.iter().enumerate() {
        c.both(
            "sibling",
            &format!(
                "{} {}",
                spell(rng, name.clone()),
                REFERRAL_TYPES[j % REFERRAL_TYPES.len()]
            ),
        );
    }
    for s in x.sibling_servers.iter().step_by(3) {
        if s.ends_with(TLD) {
            c.add("sibling", &format!("{s} A +do"));
        }
    }
    // Names below a cut: deep names, other types, DS below the cut.
    for (j, i) in sample(rng, &k.provider, SAMPLE).into_iter().enumerate() {
        let name = fqdn(m, i);
        c.add("below-cut", &format!("a.b.c.{name} TXT +do"));
        c.add("below-cut", &format!("_dmarc.{name} TXT"));
        let t = if j % 2 == 0 { "DS" } else { "SOA" };
        c.add("below-cut", &format!("www.{name} {t} +do"));
    }
    // NXDOMAIN: names that are not in the zone (closest encloser the apex, or
    // an existing authoritative name), with and without DO.
    for j in 0..2 * SAMPLE {
        let name = fqdn(m, m.nx_index(rng.next_u64()));
        let line = match j % 4 {
            0 => format!("{name} A +do"),
            1 => format!("www.{name} AAAA +do"),
            2 => format!("{name} MX"),
            _ => format!("{} A +do +rd", spell(rng, format!("x.y.{name}"))),
        };
        c.add("nxdomain", &line);
    }
    for line in [
        format!("zz.nic.{TLD} A"),
        format!("nic.{TLD} A"),
        format!("a.nic.{TLD} MX"),
        format!("x.a.nic.{TLD} A"),
        format!("sib-{SIBLINGS}.{TLD} A"),
        format!("zzzzzzzzzzzz.{TLD} NS"),
        format!("0.{TLD} A"),
        format!("{TLD} TYPE65280"),
    ] {
        c.both("nxdomain", &line);
    }
    // DS at the parent: an existing DS, none (NODATA, opt-out proof), no name.
    for (kind, from) in [("ds-signed", &k.signed), ("ds-unsigned", &k.unsigned)] {
        for i in sample(rng, from, SAMPLE) {
            c.both(kind, &format!("{} DS", spell(rng, fqdn(m, i))));
        }
    }
    for (name, _) in x.siblings.iter().step_by(2) {
        c.add("ds-signed", &format!("{name} DS +do"));
    }
    for _ in 0..SAMPLE / 2 {
        let name = fqdn(m, m.nx_index(rng.next_u64()));
        c.both("ds-nxdomain", &format!("{name} DS"));
    }
    // Empty non-terminals above delegations, and the delegations below them.
    for e in 0..3 {
        let ent = format!("ent-{e}.{TLD}");
        for t in ["A", "DS", "NS"] {
            c.both("ent", &format!("{ent} {t}"));
        }
        c.both("ent", &format!("zz.{ent} A"));
    }
    for d in &x.below_ents {
        for t in ["A", "DS"] {
            c.both("ent", &format!("{d} {t}"));
        }
        c.both("ent", &format!("www.{d} A"));
        c.add("ent", &format!("zz{d} A +do"));
    }
    // The apex and its servers.
    for t in [
        "SOA",
        "NS",
        "DNSKEY",
        "NSEC3PARAM",
        "ANY",
        "CDS",
        "CDNSKEY",
        "MX",
        "TXT",
        "NSEC3",
        "RRSIG",
        "A",
        "DS",
    ] {
        for opts in ["", "+do", "+do +rd", "+edns=4096 +do"] {
            c.add("apex", &format!("{TLD} {t} {opts}"));
        }
    }
    for s in ["a", "m"] {
        c.both("apex", &format!("{s}.nic.{TLD} A"));
        c.both("apex", &format!("{s}.NIC.{TLD} AAAA"));
    }
    // The NSEC3 owner names are not names of the zone.
    for o in sample(
        rng,
        &(0..nsec3.len() as u64).collect::<Vec<_>>(),
        SAMPLE / 3,
    ) {
        let o = &nsec3[o as usize];
        c.add("nsec3-owner", &format!("{o} A +do"));
        c.add("nsec3-owner", &format!("{o} NSEC3 +do"));
    }
    // Answers larger than the payload: truncated over UDP, whole over TCP.
    let mut large = vec![
        format!("{TLD} NS"),
        format!("{TLD} ANY"),
        format!("{TLD} DNSKEY"),
    ];
    for b in &x.big {
        large.push(format!("{b} A"));
        large.push(format!("ns1.{b} AAAA"));
        large.push(format!("{b} DS"));
    }
    for line in &large {
        for opts in [
            "",
            "+edns=512",
            "+edns",
            "+edns=4096",
            "+do",
            "+edns=512 +do",
        ] {
            c.add("large", &format!("{line} {opts}"));
        }
    }
    // The generator's own query files (dnsperf `name TYPE`), alternately with DO.
    for (f, path) in QUERY_FILES.iter().zip(query_files) {
        let kind: &'static str = match *f {
            "queries-referral.txt" => "file-referral",
            "queries-nxdomain.txt" => "file-nxdomain",
            "queries-ds.txt" => "file-ds",
            "queries-mix.txt" => "file-mix",
            _ => "file-spamrun",
        };
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{f}: {e}"));
        for (j, line) in text.lines().enumerate() {
            let opts = if j % 2 == 0 { "+edns" } else { "+do" };
            c.add(kind, &format!("{} {opts}", line.trim()));
        }
    }
    c
}

#[test]
fn knot_and_lode_answer_alike_on_a_signed_tld() {
    let signer = knot_tool("kzonesign");
    if !knot_available() || !knot_program_available(&signer, "kzonesign", "knot-dnssecutils") {
        return;
    }
    let started = Instant::now();
    let n = delegations();
    let peer = peer_from_env();
    let dir = TempDir::new("tld-diff");

    // The zone: generated, the test's own delegations added, signed.
    let mut spec = TldSpec::new(TLD, n);
    spec.seed = SEED;
    spec.queries = FILE_QUERIES;
    spec.updates = 0;
    spec.threads = Some(2);
    spec.command = "apps/lode/tests/tld_differential.rs".into();
    let set = generate(&spec, &dir.0.join("gen")).unwrap_or_else(|e| panic!("generate: {e}"));
    let model = TldModel::new(&spec).unwrap_or_else(|e| panic!("model: {e}"));
    let kinds = kinds(&model);
    let mut rng = Rng::new(SEED);
    let extra = extras(&model, &kinds, &mut rng);
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&set.zone_file)
            .expect("open the generated zone");
        f.write_all(extra.text.as_bytes()).expect("append");
    }
    let generated = started.elapsed();
    let signed = sign(&signer, &dir.0, &set.zone_file);
    let nsec3 = nsec3_owners(&signed);
    let signed_at = started.elapsed();
    eprintln!(
        "tld: {n} delegations ({} with DS, {} with glue) + {} added, signed: {} NSEC3 \
         (generated in {:.1} s, signed in {:.1} s)",
        kinds.signed.len(),
        kinds.glue.len(),
        SIBLINGS + 2,
        nsec3.len(),
        generated.as_secs_f64(),
        (signed_at - generated).as_secs_f64()
    );

    // Both servers on the signed zone.
    let zones = vec![ZoneSpec {
        origin: TLD.into(),
        file: signed,
    }];
    set_start_timeout(Duration::from_secs(30 + n / 5_000));
    let knot = start_knot(&zones, pick_port(15300)).unwrap_or_else(|e| panic!("{e}"));
    let knot_ready = started.elapsed();
    let mut other = start_peer(peer, &zones, pick_port(15350)).unwrap_or_else(|e| panic!("{e}"));
    let serving = started.elapsed();
    eprintln!(
        "tld: {} serves the signed zone after {:.1} s, {} after {:.1} s more",
        knot.label,
        (knot_ready - signed_at).as_secs_f64(),
        other.label,
        (serving - knot_ready).as_secs_f64()
    );

    let cases = cases(&model, &kinds, &extra, &nsec3, &set.query_files, &mut rng);
    let accepted = load_accepted(&repo_root().join("tests/differential/tld-accepted.txt"));
    let mut tally = Tally::new(std::env::var_os("LODE_DIFF_VERBOSE").is_some());
    tally.show_at_most = SHOW;
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (kind, case) in &cases.list {
        let failed = tally.compare(&knot, &other, case, &accepted);
        let e = by_kind.entry(kind).or_default();
        e.0 += 1;
        e.1 += usize::from(failed > 0);
    }
    tally.note_unused(
        &accepted,
        |q| cases.list.iter().any(|(_, c)| c.text == q),
        "tld-accepted.txt",
    );

    // The large cases must really be truncated over UDP (else they test nothing).
    let truncated = cases
        .list
        .iter()
        .filter(|(k, _)| *k == "large")
        .filter_map(|(_, c)| exchange(knot.addr, "udp", &c.query.to_wire()))
        .filter(|r| Message::parse(r).tc)
        .count();
    eprintln!(
        "\ntld differential: {} cases ({} delegations, {} against {}), {} UDP answers of \
         Knot truncated; {:.1} s to serve, {:.1} s in all",
        cases.list.len(),
        n,
        knot.label,
        other.label,
        truncated,
        serving.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    for (kind, (count, bad)) in &by_kind {
        eprintln!("  {kind:<15} {count:>5} cases, {bad} differ");
    }
    eprintln!("tld differential summary: {}", tally.summary());
    assert!(
        other.alive(),
        "{} died during the run:\n{}",
        other.label,
        other.log_tail(30)
    );
    if cases.filter.is_none() {
        assert!(truncated > 0, "no large answer was truncated over UDP");
    }
    assert_eq!(
        tally.failures, 0,
        "{} responses differ from Knot (see above)",
        tally.failures
    );
}
