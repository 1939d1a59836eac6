//! E.164 numbers and their ENUM domain names (RFC 6116 §2.4).
//!
//! `+1-212-939-1234` ⇄ `4.3.2.1.9.3.9.2.1.2.1.e164.arpa.`: keep the digits,
//! reverse them, put a dot between each and append the ENUM apex.

use std::fmt;

/// The public ENUM apex (RFC 6116 §4.2).
pub const E164_ARPA: &str = "e164.arpa";

/// Most digits in an E.164 number, country code included (ITU-T E.164 §6).
pub const MAX_DIGITS: usize = 15;

/// Why a number or an ENUM domain name could not be converted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum E164Error {
    /// The text is empty.
    Empty,
    /// The number does not start with `+` (RFC 6116 wants the full E.164 form).
    MissingPlus,
    /// A character that is neither a digit nor a visual separator (`-`, space, `.`, `(`, `)`).
    BadCharacter(char),
    /// The number has no digit after the `+`.
    NoDigits,
    /// More than 15 digits.
    TooLong(usize),
    /// The country code starts with 0, which E.164 never assigns.
    LeadingZero,
    /// The domain name does not end in the ENUM apex.
    NotUnderApex(String),
    /// A label of the domain name that is not a single digit.
    BadLabel(String),
}

impl fmt::Display for E164Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            E164Error::Empty => f.write_str("empty input"),
            E164Error::MissingPlus => f.write_str(
                "an E.164 number starts with '+' and the country code, e.g. +1-212-939-1234",
            ),
            E164Error::BadCharacter(c) => write!(
                f,
                "unexpected character {c:?} (allowed: digits and the separators - . space ( ))"
            ),
            E164Error::NoDigits => f.write_str("no digits after '+'"),
            E164Error::TooLong(n) => {
                write!(f, "{n} digits; an E.164 number has at most {MAX_DIGITS}")
            }
            E164Error::LeadingZero => f.write_str("a country code never starts with 0"),
            E164Error::NotUnderApex(apex) => write!(f, "the name is not below {apex}"),
            E164Error::BadLabel(l) => {
                write!(f, "label {l:?} is not a single digit (RFC 6116 §2.4)")
            }
        }
    }
}

impl std::error::Error for E164Error {}

/// The digits of an E.164 number (1 to 15 ASCII digits, country code first, never 0 first).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct E164 {
    digits: String,
}

impl E164 {
    /// Parses `+` followed by digits and visual separators (`+1-212-939-1234`, `+1 (212) 939.1234`).
    pub fn parse(text: &str) -> Result<E164, E164Error> {
        let text = text.trim();
        if text.is_empty() {
            return Err(E164Error::Empty);
        }
        let rest = text.strip_prefix('+').ok_or(E164Error::MissingPlus)?;
        let mut digits = String::with_capacity(MAX_DIGITS);
        for c in rest.chars() {
            match c {
                '0'..='9' => digits.push(c),
                '-' | ' ' | '.' | '(' | ')' => {}
                other => return Err(E164Error::BadCharacter(other)),
            }
        }
        E164::from_digits(digits)
    }

    /// Checks a string of digits (no `+`).
    fn from_digits(digits: String) -> Result<E164, E164Error> {
        if digits.is_empty() {
            return Err(E164Error::NoDigits);
        }
        if digits.len() > MAX_DIGITS {
            return Err(E164Error::TooLong(digits.len()));
        }
        if digits.starts_with('0') {
            return Err(E164Error::LeadingZero);
        }
        Ok(E164 { digits })
    }

    /// Reads an ENUM domain name (`4.3.2.1.9.3.9.2.1.2.1.e164.arpa`, final dot optional)
    /// below `apex` (compared without regard to case).
    pub fn from_enum_name(name: &str, apex: &str) -> Result<E164, E164Error> {
        let name = name.trim();
        let name = name.strip_suffix('.').unwrap_or(name);
        let apex = apex.trim_end_matches('.');
        if name.is_empty() {
            return Err(E164Error::Empty);
        }
        // Compared as bytes: a cut inside a multi-byte character must not panic.
        let bytes = name.as_bytes();
        let below = bytes.len().checked_sub(apex.len() + 1);
        let head = match below {
            Some(cut)
                if bytes[cut] == b'.' && bytes[cut + 1..].eq_ignore_ascii_case(apex.as_bytes()) =>
            {
                // `cut` is the index of an ASCII '.', hence a character boundary.
                &name[..cut]
            }
            _ => return Err(E164Error::NotUnderApex(format!("{apex}."))),
        };
        let mut digits = String::with_capacity(MAX_DIGITS);
        for label in head.rsplit('.') {
            match label.as_bytes() {
                [d @ b'0'..=b'9'] => digits.push(char::from(*d)),
                _ => return Err(E164Error::BadLabel(label.to_owned())),
            }
        }
        E164::from_digits(digits)
    }

    /// The digits, country code first, without `+`.
    pub fn digits(&self) -> &str {
        &self.digits
    }

    /// The ENUM domain name below `apex`, absolute (with the final dot).
    pub fn enum_name(&self, apex: &str) -> String {
        let apex = apex.trim_end_matches('.');
        let mut out = String::with_capacity(2 * self.digits.len() + apex.len() + 1);
        for d in self.digits.chars().rev() {
            out.push(d);
            out.push('.');
        }
        out.push_str(apex);
        out.push('.');
        out
    }
}

impl fmt::Display for E164 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{}", self.digits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_to_name_rfc6116_example() {
        let n = E164::parse("+1-212-939-1234").expect("valid number");
        assert_eq!(n.digits(), "12129391234");
        assert_eq!(n.enum_name(E164_ARPA), "4.3.2.1.9.3.9.2.1.2.1.e164.arpa.");
        let n = E164::parse(" +44 (20) 7946.0000 ").expect("separators are allowed");
        assert_eq!(
            n.enum_name("e164.example.net."),
            "0.0.0.0.6.4.9.7.0.2.4.4.e164.example.net."
        );
    }

    #[test]
    fn name_to_number_and_back() {
        for name in [
            "4.3.2.1.9.3.9.2.1.2.1.e164.arpa",
            "4.3.2.1.9.3.9.2.1.2.1.E164.ARPA.",
        ] {
            let n = E164::from_enum_name(name, E164_ARPA).expect("valid name");
            assert_eq!(n.to_string(), "+12129391234");
            assert_eq!(n.enum_name(E164_ARPA), "4.3.2.1.9.3.9.2.1.2.1.e164.arpa.");
        }
    }

    #[test]
    fn bad_numbers() {
        assert_eq!(E164::parse(""), Err(E164Error::Empty));
        assert_eq!(E164::parse("12129391234"), Err(E164Error::MissingPlus));
        assert_eq!(
            E164::parse("+1-212-CALL"),
            Err(E164Error::BadCharacter('C'))
        );
        assert_eq!(E164::parse("+"), Err(E164Error::NoDigits));
        assert_eq!(
            E164::parse("+1234567890123456"),
            Err(E164Error::TooLong(16))
        );
        assert!(E164::parse("+123456789012345").is_ok());
        assert_eq!(E164::parse("+0212"), Err(E164Error::LeadingZero));
    }

    #[test]
    fn bad_names() {
        assert!(matches!(
            E164::from_enum_name("ü.e164.arpaé", E164_ARPA),
            Err(E164Error::NotUnderApex(_))
        ));
        assert!(matches!(
            E164::from_enum_name("4.3.2.1.example.com", E164_ARPA),
            Err(E164Error::NotUnderApex(_))
        ));
        assert!(matches!(
            E164::from_enum_name("xe164.arpa", E164_ARPA),
            Err(E164Error::NotUnderApex(_))
        ));
        assert!(matches!(
            E164::from_enum_name("e164.arpa", E164_ARPA),
            Err(E164Error::NotUnderApex(_))
        ));
        assert_eq!(
            E164::from_enum_name("4.32.1.e164.arpa", E164_ARPA),
            Err(E164Error::BadLabel("32".into()))
        );
        assert_eq!(
            E164::from_enum_name("4..1.e164.arpa", E164_ARPA),
            Err(E164Error::BadLabel(String::new()))
        );
        assert_eq!(
            E164::from_enum_name("1.0.e164.arpa", E164_ARPA),
            Err(E164Error::LeadingZero)
        );
    }
}
