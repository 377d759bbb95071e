use super::*;

fn chars(keys: &[Key]) -> String {
    keys.iter()
        .filter_map(|k| match k {
            Key::Char(c) => Some(*c as char),
            _ => None,
        })
        .collect()
}

#[test]
fn typed_keys_come_through() {
    let mut r = KeyReader::default();
    assert_eq!(
        r.feed(b"aB\r\x7f\x03\x04\n"),
        vec![
            Key::Char(b'a'),
            Key::Char(b'B'),
            Key::Enter,
            Key::Erase,
            Key::Cancel,
            Key::Cancel,
            Key::Enter
        ]
    );
}

#[test]
fn what_the_terminal_sends_of_its_own_is_no_key() {
    let sent: &[&[u8]] = &[
        // Replies to colour queries (OSC 11, 10, 4), with BEL and ST.
        b"\x1b]11;rgb:aaaa/bbbb/cccc\x07",
        b"\x1b]10;rgb:dddd/0000/aaaa\x1b\\",
        b"\x1b]4;1;rgb:aaaa/0000/0000\x1b\\",
        // XTVERSION and XTGETTCAP (DCS), device attributes (CSI).
        b"\x1bP>|xterm(390)\x1b\\",
        b"\x1bP1+r6b637562=1b4f41\x1b\\",
        b"\x1b[?64;1;2;6;9;15;18;21;22c",
        b"\x1b[>41;390;0c",
        // Cursor position, focus in and out, SGR and X10 mouse reports.
        b"\x1b[24;80R",
        b"\x1b[I\x1b[O",
        b"\x1b[<0;10;20M\x1b[<0;10;20m",
        b"\x1b[M aa\x1b[Mdsa",
        // Arrows, F1 (SS3), F5, Alt-a, Home; a paste's brackets.
        b"\x1b[A\x1bOP\x1b[15~\x1ba\x1b[1;5H\x1b[[A",
        b"\x1b[200~\x1b[201~",
        // The same in 8-bit C1 form and as UTF-8 C1 (C2 9D = OSC).
        b"\x9d11;rgb:aaaa/aaaa/aaaa\x07\x9b?1;2c",
        b"\xc2\x9d11;rgb:aaaa/aaaa/aaaa\x07\xc2\x9bA",
        // A title holding UTF-8 (a 0x9c inside is no terminator).
        b"\x1b]l\xe2\x80\x9ca\rs\r\x1b\\",
        // APC, PM and SOS strings; a charset switch.
        b"\x1b_Gi=1;OK\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\\x1b(B",
    ];
    for bytes in sent {
        let mut r = KeyReader::default();
        let keys = r.feed(bytes);
        assert!(
            keys.is_empty(),
            "{:?} gave {keys:?}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(chars(&r.feed(b"d")), "d", "the sequence ended");
    }
}

#[test]
fn a_sequence_split_between_reads_stays_one() {
    let reply = b"\x1b]11;rgb:aaaa/bbbb/cccc\x1b\\o";
    for cut in 0..reply.len() {
        let mut r = KeyReader::default();
        let mut keys = r.feed(&reply[..cut]);
        keys.extend(r.feed(&reply[cut..]));
        assert_eq!(chars(&keys), "o", "cut at {cut}");
    }
}

#[test]
fn a_reply_cut_by_the_flush_marks_its_tail_dropped() {
    let mut r = KeyReader::default();
    // The head went; the tail is letters and a terminator.
    let keys = r.feed(b"aaaa/aaaa\x07");
    assert_eq!(chars(&keys), "aaaa/aaaa");
    assert!(r.take_dropped());
    assert!(!r.take_dropped(), "taken");
    assert_eq!(chars(&r.feed(b"a")), "a");
    assert!(!r.take_dropped(), "typed keys drop nothing");
}

#[test]
fn what_is_pasted_is_no_key() {
    let mut r = KeyReader::default();
    assert!(r.feed(b"\x1b[200~x\ra\r\x1b[201~").is_empty());
    assert!(r.take_dropped());
    // Split between reads too; and typing after the paste counts.
    assert!(r.feed(b"\x1b[20").is_empty());
    assert!(r.feed(b"0~a\r\x1b[2").is_empty());
    assert_eq!(r.feed(b"01~d"), vec![Key::Char(b'd')]);
}
