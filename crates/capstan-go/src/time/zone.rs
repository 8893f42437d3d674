//! Time zones for `dateInZone`/`htmlDateInZone`: UTC, `Local` (the renderer runs in UTC, as
//! the oracle does), and named zones from the system's TZif database.

/// A zone: a name and how to find the offset at an instant.
#[derive(Clone, Debug)]
pub struct Zone {
    pub name: String,
    /// Transitions (unix seconds, offset seconds, abbreviation), ascending; empty = fixed.
    transitions: Vec<(i64, i32, String)>,
    /// The offset and abbreviation before the first transition (or always, when fixed).
    initial: (i32, String),
}

impl Zone {
    pub fn utc() -> Zone {
        Zone::fixed("UTC", 0, "UTC")
    }

    pub fn fixed(name: &str, offset: i32, abbrev: &str) -> Zone {
        Zone {
            name: name.into(),
            transitions: Vec::new(),
            initial: (offset, abbrev.into()),
        }
    }

    /// `time.LoadLocation`; `None` for unknown names.
    pub fn load(name: &str) -> Option<Zone> {
        match name {
            "" | "UTC" => return Some(Zone::utc()),
            "Local" => return Some(Zone::fixed("Local", 0, "UTC")),
            _ => {}
        }
        let safe = !name.starts_with('/') && !name.split('/').any(|p| p == ".." || p.is_empty());
        if !safe {
            return None;
        }
        let data = std::fs::read(format!("/usr/share/zoneinfo/{name}")).ok()?;
        parse_tzif(name, &data)
    }

    /// The offset (seconds east of UTC) and abbreviation at `unix` seconds.
    pub fn lookup(&self, unix: i64) -> (i32, &str) {
        let idx = self.transitions.partition_point(|t| t.0 <= unix);
        match idx.checked_sub(1).and_then(|i| self.transitions.get(i)) {
            Some((_, off, abbr)) => (*off, abbr),
            None => (self.initial.0, &self.initial.1),
        }
    }
}

fn be_u32(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

/// Reads the 64-bit section of a TZif (v2+) file; transitions only (no footer rule: the
/// system's files list transitions through 2037).
fn parse_tzif(name: &str, d: &[u8]) -> Option<Zone> {
    if d.get(..4)? != b"TZif" {
        return None;
    }
    let counts = |at: usize| -> Option<[usize; 6]> {
        let mut c = [0usize; 6];
        for (k, slot) in c.iter_mut().enumerate() {
            *slot = be_u32(d, at + 20 + 4 * k)? as usize;
        }
        Some(c)
    };
    let [isut, isstd, leap, time, typ, chars] = counts(0)?;
    let v1_len = time * 5 + typ * 6 + chars + leap * 8 + isstd + isut;
    let v2 = 44 + v1_len;
    if d.get(v2..v2 + 4)? != b"TZif" {
        return None;
    }
    let [_, _, _, time, typ, chars] = counts(v2)?;
    let mut at = v2 + 44;
    let mut times = Vec::with_capacity(time);
    for k in 0..time {
        let b = d.get(at + 8 * k..at + 8 * k + 8)?;
        times.push(i64::from_be_bytes(b.try_into().ok()?));
    }
    at += 8 * time;
    let idx = d.get(at..at + time)?.to_vec();
    at += time;
    let mut types = Vec::with_capacity(typ);
    for k in 0..typ {
        let b = d.get(at + 6 * k..at + 6 * k + 6)?;
        let off = i32::from_be_bytes(b[..4].try_into().ok()?);
        types.push((off, b[5] as usize));
    }
    at += 6 * typ;
    let abbrevs = d.get(at..at + chars)?;
    let abbr = |i: usize| -> String {
        let tail = abbrevs.get(i..).unwrap_or_default();
        let end = tail.iter().position(|&c| c == 0).unwrap_or(tail.len());
        String::from_utf8_lossy(&tail[..end]).into_owned()
    };
    let ty = |i: usize| types.get(i).map(|&(off, a)| (off, abbr(a)));
    let transitions = times
        .iter()
        .zip(idx.iter())
        .filter_map(|(&t, &i)| ty(i as usize).map(|(off, a)| (t, off, a)))
        .collect();
    let initial = ty(0)?;
    Some(Zone {
        name: name.into(),
        transitions,
        initial,
    })
}
