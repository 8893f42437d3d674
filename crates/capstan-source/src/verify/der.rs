//! A small strict DER reader (X.690): tag, definite length, value — enough to walk the CMS
//! and RFC 3161 structures of a signed timestamp ([`super::timestamp`]). Only single-byte tags
//! (every tag those structures use) and minimal lengths are accepted; anything else is an error
//! naming what was read, never a panic.

/// Universal and context tags the timestamp structures use.
pub const INTEGER: u8 = 0x02;
pub const OCTET_STRING: u8 = 0x04;
pub const OID: u8 = 0x06;
pub const SEQUENCE: u8 = 0x30;
pub const SET: u8 = 0x31;
pub const GENERALIZED_TIME: u8 = 0x18;
/// `[0]` constructed (EXPLICIT, or IMPLICIT of a constructed type).
pub const CONTEXT_0: u8 = 0xa0;
/// `[1]` constructed.
pub const CONTEXT_1: u8 = 0xa1;
/// `[0]` primitive (an IMPLICIT OCTET STRING, e.g. a subject key identifier).
pub const CONTEXT_0_PRIMITIVE: u8 = 0x80;

/// One element: its tag, its contents, and its whole encoding (tag and length included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element<'a> {
    pub tag: u8,
    pub value: &'a [u8],
    pub raw: &'a [u8],
}

/// A cursor over consecutive elements (the contents of a SEQUENCE or SET).
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next element, whatever its tag.
    pub fn any(&mut self, what: &str) -> Result<Element<'a>, String> {
        let bytes = self.rest;
        let (&tag, after_tag) = bytes.split_first().ok_or_else(|| format!("{what}: missing"))?;
        if tag & 0x1f == 0x1f {
            return Err(format!("{what}: a multi-byte tag"));
        }
        let (&first, after_len) = after_tag
            .split_first()
            .ok_or_else(|| format!("{what}: no length"))?;
        let (len, header) = if first < 0x80 {
            (usize::from(first), 2)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || after_len.len() < n {
                return Err(format!("{what}: a bad length"));
            }
            let len = after_len[..n]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            if len < 0x80 || after_len[0] == 0 {
                return Err(format!("{what}: a length not in DER's shortest form"));
            }
            (len, 2 + n)
        };
        let end = header
            .checked_add(len)
            .filter(|end| *end <= bytes.len())
            .ok_or_else(|| format!("{what}: {len} bytes announced, fewer there"))?;
        self.rest = &bytes[end..];
        Ok(Element {
            tag,
            value: &bytes[header..end],
            raw: &bytes[..end],
        })
    }

    /// The next element, which must have `tag`.
    pub fn expect(&mut self, tag: u8, what: &str) -> Result<Element<'a>, String> {
        let element = self.any(what)?;
        if element.tag != tag {
            return Err(format!("{what}: tag {:#04x}, expected {tag:#04x}", element.tag));
        }
        Ok(element)
    }

    /// The next element when it has `tag` (an OPTIONAL field), else nothing is read.
    pub fn optional(&mut self, tag: u8, what: &str) -> Result<Option<Element<'a>>, String> {
        match self.rest.first() {
            Some(&t) if t == tag => self.any(what).map(Some),
            _ => Ok(None),
        }
    }
}

/// The only element of `bytes`, which must have `tag` and nothing after it.
pub fn single<'a>(bytes: &'a [u8], tag: u8, what: &str) -> Result<Element<'a>, String> {
    let mut reader = Reader::new(bytes);
    let element = reader.expect(tag, what)?;
    if !reader.is_empty() {
        return Err(format!("{what}: trailing bytes"));
    }
    Ok(element)
}

/// The dotted text of an OBJECT IDENTIFIER's contents.
pub fn oid_text(value: &[u8]) -> Result<String, String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut acc: u64 = 0;
    for (i, b) in value.iter().enumerate() {
        if acc > (u64::MAX >> 7) {
            return Err("an object identifier arc too large".into());
        }
        acc = (acc << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (acc / 40).min(2);
                arcs.push(first);
                arcs.push(acc - first * 40);
            } else {
                arcs.push(acc);
            }
            acc = 0;
        } else if i + 1 == value.len() {
            return Err("an object identifier cut short".into());
        }
    }
    if arcs.is_empty() {
        return Err("an empty object identifier".into());
    }
    Ok(arcs.iter().map(u64::to_string).collect::<Vec<_>>().join("."))
}

/// The OID of an AlgorithmIdentifier's contents (its parameters ignored).
pub fn algorithm(element: &Element<'_>, what: &str) -> Result<String, String> {
    let mut reader = Reader::new(element.value);
    oid_text(reader.expect(OID, what)?.value)
}

/// Unix seconds of a GeneralizedTime (`YYYYMMDDHHMMSS[.f…]Z`, UTC as DER requires; a
/// fraction is dropped).
pub fn generalized_time(value: &[u8]) -> Result<i64, String> {
    let text = std::str::from_utf8(value).map_err(|_| "a GeneralizedTime that is not text")?;
    let bad = || format!("{text:?} is not a DER GeneralizedTime");
    let body = text.strip_suffix('Z').ok_or_else(bad)?;
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    if whole.len() != 14
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || fraction.ends_with('0')
    {
        return Err(bad());
    }
    let num = |range: std::ops::Range<usize>| whole[range].parse::<u16>().map_err(|_| bad());
    let month = time::Month::try_from(u8::try_from(num(4..6)?).map_err(|_| bad())?).map_err(|_| bad())?;
    let date = time::Date::from_calendar_date(
        i32::from(num(0..4)?),
        month,
        u8::try_from(num(6..8)?).map_err(|_| bad())?,
    )
    .map_err(|_| bad())?;
    let clock = time::Time::from_hms(
        u8::try_from(num(8..10)?).map_err(|_| bad())?,
        u8::try_from(num(10..12)?).map_err(|_| bad())?,
        u8::try_from(num(12..14)?).map_err(|_| bad())?,
    )
    .map_err(|_| bad())?;
    Ok(time::PrimitiveDateTime::new(date, clock)
        .assume_utc()
        .unix_timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_read_and_bad_encodings_refused() {
        let mut r = Reader::new(b"\x02\x01\x05\x04\x00\x30\x03\x02\x01\x07");
        assert_eq!(r.expect(INTEGER, "n").unwrap().value, [5]);
        assert_eq!(r.optional(CONTEXT_0, "x").unwrap(), None);
        assert_eq!(r.expect(OCTET_STRING, "o").unwrap().value, b"");
        let seq = r.expect(SEQUENCE, "s").unwrap();
        assert_eq!((seq.value, seq.raw.len()), (&b"\x02\x01\x07"[..], 5));
        assert!(r.is_empty());
        let long = [&[0x04, 0x81, 0x80][..], &[7u8; 128]].concat();
        assert_eq!(single(&long, OCTET_STRING, "o").unwrap().value.len(), 128);
        let table: [(&[u8], &str); 6] = [
            (b"", "missing"),
            (b"\x04", "no length"),
            (b"\x04\x05abc", "5 bytes announced"),
            (b"\x04\x81\x05abcde", "shortest form"),
            (b"\x1f\x01\x00", "multi-byte tag"),
            (b"\x02\x01\x05\x00", "trailing bytes"),
        ];
        for (bytes, want) in table {
            let err = single(bytes, bytes.first().copied().unwrap_or(4), "field").unwrap_err();
            assert!(err.contains(want) && err.starts_with("field"), "{bytes:?}: {err}");
        }
        assert!(
            single(b"\x02\x01\x05", OCTET_STRING, "o")
                .unwrap_err()
                .contains("expected 0x04")
        );
    }

    #[test]
    fn object_identifiers_and_times() {
        assert_eq!(
            oid_text(b"\x2a\x86\x48\xce\x3d\x04\x03\x02").unwrap(),
            "1.2.840.10045.4.3.2"
        );
        assert_eq!(
            oid_text(b"\x60\x86\x48\x01\x65\x03\x04\x02\x01").unwrap(),
            "2.16.840.1.101.3.4.2.1"
        );
        assert!(oid_text(b"\x2a\x86").is_err() && oid_text(b"").is_err());
        assert_eq!(generalized_time(b"20250612120220Z").unwrap(), 1_749_729_740);
        assert_eq!(generalized_time(b"20250612120220.123Z").unwrap(), 1_749_729_740);
        for bad in [
            &b"20250612120220"[..],
            b"2025061212022Z",
            b"20251312120220Z",
            b"20250612120220.10Z",
            b"2025061212022aZ",
        ] {
            assert!(generalized_time(bad).is_err(), "{bad:?}");
        }
    }
}
