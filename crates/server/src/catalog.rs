//! Catalog zones (RFC 9432, version 2): generated from the zones that name
//! a catalog in `catalog-zone` (the producer), and read back into member
//! zones (the consumer).
//!
//! ```text
//!  catalog.          0 SOA invalid. invalid. 1 3600 600 2147483646 0
//!  catalog.          0 NS  invalid.
//!  version.catalog.  0 TXT "2"
//!  <id>.zones.catalog.        0 PTR member.        one per member zone
//!  group.<id>.zones.catalog.  0 TXT "group"        when it has a group
//! ```
//!
//! A member's unique label is a hash of its name (stable across restarts
//! and reloads, so a member keeps its label). The serial written here is 1:
//! the catalog is a live zone, so a change of members reaches the zone's
//! writer as a difference and the serial policy moves the serial on.

use lode_wire::Name;

/// The catalog zone's text for `members` (member, group).
pub(crate) fn generate(origin: &Name, members: &[(Name, Option<String>)]) -> String {
    let mut text = format!(
        "$ORIGIN {origin}\n@ 0 SOA invalid. invalid. 1 3600 600 2147483646 0\n@ 0 NS invalid.\nversion 0 TXT \"2\"\n"
    );
    for (name, group) in members {
        let id = member_id(name);
        text.push_str(&format!("{id}.zones 0 PTR {name}\n"));
        if let Some(g) = group {
            text.push_str(&format!("group.{id}.zones 0 TXT \"{}\"\n", escape(g)));
        }
    }
    text
}

/// A member's unique label: 16 hex digits of a 64-bit FNV-1a hash of its
/// lower-cased wire name.
pub(crate) fn member_id(name: &Name) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.to_lowercase().as_wire() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The source tag of a generated catalog: its members and groups.
pub(crate) fn members_tag(members: &[(Name, Option<String>)]) -> Vec<u8> {
    let mut tag = b"catalog".to_vec();
    for (name, group) in members {
        tag.extend_from_slice(name.to_lowercase().as_wire());
        tag.push(0xff);
        tag.extend_from_slice(group.as_deref().unwrap_or("").as_bytes());
        tag.push(0xfe);
    }
    tag
}

/// A group name as zone-file text inside quotes.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_catalog_parses_to_the_rfc_9432_layout() {
        let origin: Name = "cat.example.".parse().unwrap();
        let members = vec![
            ("a.example.".parse().unwrap(), None),
            (
                "B.example.".parse().unwrap(),
                Some("my \"group\"".to_string()),
            ),
        ];
        let text = generate(&origin, &members);
        let z = lode_zonefile::parse_bytes(text.as_bytes(), "catalog", &origin, Some(0)).unwrap();
        let lines: Vec<String> = z.records.iter().map(lode_zonefile::format_record).collect();
        let id_b = member_id(&"b.example.".parse().unwrap());
        assert_eq!(
            id_b,
            member_id(&"B.EXAMPLE.".parse().unwrap()),
            "ids ignore case"
        );
        assert!(
            lines
                .iter()
                .any(|l| l == &format!("{id_b}.zones.cat.example. 0 IN PTR B.example.")),
            "{lines:#?}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&format!(
                "group.{id_b}.zones.cat.example. 0 IN TXT \"my \\\"group\\\"\""
            ))),
            "{lines:#?}"
        );
        assert!(lines
            .iter()
            .any(|l| l == "version.cat.example. 0 IN TXT \"2\""));
        assert_eq!(z.records.len(), 3 + 2 + 1);
    }
}
