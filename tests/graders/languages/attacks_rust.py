"""Attacks on Rust ``test_program`` grading: wrong solutions that try to forge a pass.

Each attack passes the naive harness (the candidate's code and the tests compiled
as one ``rustc --test`` program, verdict = exit status: what peers run) and must
fail the bridged one (the candidate's code in its own process behind a
dispatcher, the tests with stubs in the harness, libtest's tally as the
verdict). ``response`` is the candidate's answer: a whole program when it
defines the function, else a body that continues the prompt.
"""

from __future__ import annotations

# The `use` lines every HumanEvalPack Rust prompt opens with (after `fn main(){}`).
_USES = (
    "fn main(){}\n\n"
    "use std::{slice::Iter, cmp::{max, self}, mem::replace, collections::{HashSet, HashMap}, "
    "ops::Index, ascii::AsciiExt};\n"
    "use rand::Rng;\nuse regex::Regex;\nuse md5;\nuse std::any::{Any, TypeId};\n\n"
)

# HumanEvalPack Rust rows (Rust/53, Rust/0, Rust/12, Rust/10, Rust/15): prompts and tests.
ADD_PROMPT = _USES + "/*\nAdd two numbers x and y\n*/\nfn add(x:i32, y:i32) -> i32{\n"
ADD_TESTS = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_add() {
        assert!(add(0, 1) == 1);
        assert!(add(1, 0) == 1);
        assert!(add(2, 3) == 5);
        assert!(add(5, 7) == 12);
        assert!(add(7, 5) == 12);
        for _ in 0..100 {
            let mut rng = rand::thread_rng();
            let mut x: i32 = rng.gen();
            x = x % 1000;
            let mut y: i32 = rng.gen();
            y = y % 1000;

            assert!(add(x, y) == x + y);
        }
    }

}
"""

CLOSE_PROMPT = (
    _USES
    + "/*\n Check if in given list of numbers, are any two numbers closer to each other than\n"
    "    given threshold.\n    \n*/\n"
    "fn has_close_elements(numbers:Vec<f32>, threshold: f32) -> bool{\n"
)
CLOSE_TESTS = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_has_close_elements() {
        assert_eq!(has_close_elements(vec![11.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3), true);
        assert_eq!(has_close_elements(vec![1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05), false);
        assert_eq!(has_close_elements(vec![1.0, 2.0, 5.9, 4.0, 5.0], 0.95), true);
        assert_eq!(has_close_elements(vec![1.0, 2.0, 5.9, 4.0, 5.0], 0.8), false);
        assert_eq!(has_close_elements(vec![1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1), true);
        assert_eq!(has_close_elements(vec![1.1, 2.2, 3.1, 4.1, 5.1], 1.0), true);
        assert_eq!(has_close_elements(vec![1.1, 2.2, 3.1, 4.1, 5.1], 0.5), false);
    }

}
"""

LONGEST_PROMPT = (
    _USES + "/*\n Out of list of strings, return the longest one. Return the first one in case of "
    "multiple\n    strings of the same length. Return None in case the input list is empty.\n"
    "    \n*/\nfn longest(strings:Vec<String>) -> Option<String>{\n"
)
LONGEST_TESTS = """
#[cfg(test)]
mod tests {
    use super::*;

#[test]
    fn test_longest() {
        assert!(longest(vec![]) == None);
        assert!(
            longest(vec!["x".to_string(), "y".to_string(), "z".to_string()])
                == Some("x".to_string())
        );
        assert!(
            longest(vec![
                "x".to_string(),
                "yyy".to_string(),
                "zzzz".to_string(),
                "www".to_string(),
                "kkkk".to_string(),
                "abc".to_string()
            ]) == Some("zzzz".to_string())
        );
    }

}
"""

PALINDROME_PROMPT = (
    _USES + "fn is_palindrome_10(str: &str) -> bool {\n"
    "        let s: String = str.chars().rev().collect();\n"
    "        return s==str;\n    }\n\n"
    "/*\n Find the shortest palindrome that begins with a supplied string.\n*/\n"
    "fn make_palindrome(str: &str) -> String {\n"
)
PALINDROME_TESTS = """
#[cfg(test)]
mod tests {
    use super::*;

 #[test]
    fn test_make_palindrome() {
        assert_eq!(make_palindrome(""), "");
        assert_eq!(make_palindrome("x"), "x");
        assert_eq!(make_palindrome("xyz"), "xyzyx");
        assert_eq!(make_palindrome("xyx"), "xyx");
        assert_eq!(make_palindrome("jerry"), "jerryrrej");
    }

}
"""

SEQUENCE_PROMPT = (
    _USES + "/*\n Return a string containing space-delimited numbers starting from 0 upto n "
    "inclusive.\n    \n*/\nfn string_sequence(n:i32) -> String{\n"
)
SEQUENCE_TESTS = """
#[cfg(test)]
mod tests {
    use super::*;

 #[test]
    fn test_string_sequence() {
        assert!(string_sequence(0) == "0".to_string());
        assert!(string_sequence(3) == "0 1 2 3".to_string());
        assert!(string_sequence(10) == "0 1 2 3 4 5 6 7 8 9 10".to_string());
    }

}
"""

ATTACKS: list[dict[str, str]] = [
    {
        "name": "exit_zero_in_a_static_initializer",
        "why": (
            "a function pointer in .init_array runs before libtest's main and exits 0: the "
            "naive test binary ends 'successfully' before a single assert; the candidate's own "
            "process exits before serving, so every stub call reads end of stream and the "
            "harness exits 97"
        ),
        "prompt": ADD_PROMPT,
        "response": """    x - y
}

#[used]
#[link_section = ".init_array"]
static LEAVE_BEFORE_MAIN: extern "C" fn() = {
    extern "C" fn leave() {
        std::process::exit(0);
    }
    leave
};
""",
        "tests": ADD_TESTS,
        "setup_code": "",
    },
    {
        "name": "cfg_test_only_exit",
        "why": (
            "a #[cfg(test)] trick: the early exit exists only when the code is compiled with "
            "--test (where the peers' harness looks), so a plain build would show nothing odd; "
            "the candidate's build is never a test build, and its wrong answers reach the asserts"
        ),
        "prompt": ADD_PROMPT,
        "response": """    x * y
}

#[cfg(test)]
#[used]
#[link_section = ".init_array"]
static ONLY_UNDER_TEST: extern "C" fn() = {
    extern "C" fn quit() {
        if cfg!(test) {
            std::process::exit(0);
        }
    }
    quit
};
""",
        "tests": ADD_TESTS,
        "setup_code": "",
    },
    {
        "name": "process_exit_in_the_function",
        "why": (
            "std::process::exit(0) at the first call ends the naive test binary with status "
            "0 mid-test; across the bridge it only ends the candidate's process, and the stub "
            "that reads end of stream exits the harness with 97"
        ),
        "prompt": CLOSE_PROMPT,
        "response": "    std::process::exit(0)\n}\n",
        "tests": CLOSE_TESTS,
        "setup_code": "",
    },
    {
        "name": "shadow_assert_macros",
        "why": (
            "macro_rules! assert / assert_eq defined before the tests' module are in its "
            "textual scope and shadow the prelude's: every assert becomes a no-op; in the "
            "harness the tests' asserts are the real ones (no candidate text is there)"
        ),
        "prompt": ADD_PROMPT,
        "response": """    0
}

macro_rules! assert {
    ($($t:tt)*) => {};
}
macro_rules! assert_eq {
    ($($t:tt)*) => {};
}
""",
        "tests": ADD_TESTS,
        "setup_code": "",
    },
    {
        "name": "panic_hook_exits_zero",
        "why": (
            "monkey-patching the test framework: a panic hook installed at the first call "
            "turns the first failed assert into exit(0); the hook lives in the candidate's "
            "process, the harness's failed assert still fails its test"
        ),
        "prompt": PALINDROME_PROMPT,
        "response": """    std::panic::set_hook(Box::new(|_| std::process::exit(0)));
    String::from(str)
}
""",
        "tests": PALINDROME_TESTS,
        "setup_code": "",
    },
    {
        "name": "print_libtest_pass_lines_then_exit",
        "why": (
            "prints libtest's own pass lines ('test tests::test_longest ... ok', 'test "
            "result: ok. 1 passed') and exits 0: the naive run's status says pass; the "
            "candidate's stdout is not the harness's, whose tally reads only its own output"
        ),
        "prompt": LONGEST_PROMPT,
        "response": """    println!("test tests::test_longest ... ok");
    println!();
    println!("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; \\
              finished in 0.00s");
    eprintln!("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
    std::process::exit(0)
}
""",
        "tests": LONGEST_TESTS,
        "setup_code": "",
    },
    {
        "name": "shadow_string_with_an_always_equal_type",
        "why": (
            "an always-equal object: a struct named String shadows the prelude's, so the "
            "prompt's own `-> String` now returns it, and its PartialEq says equal to "
            "anything; the dispatcher must encode the declared std String, so the "
            "candidate's build fails to compile (a failed run), and the harness decodes a real "
            "String anyway"
        ),
        "prompt": SEQUENCE_PROMPT,
        "response": """    String
}

pub struct String;
impl<T: ?Sized> PartialEq<T> for String {
    fn eq(&self, _other: &T) -> bool {
        true
    }
}
""",
        "tests": SEQUENCE_TESTS,
        "setup_code": "",
    },
    {
        "name": "forge_replies_on_descriptor_3",
        "why": (
            "writes a stack of forged replies ('rb1': true) on descriptor 3 ahead of the "
            "calls, then exits 0 (which alone passes the naive run, where descriptor 3 is "
            "closed); the harness takes each forged reply as one call's answer, and the "
            "tests that expect false fail"
        ),
        "prompt": CLOSE_PROMPT,
        "response": """    use std::io::Write;
    use std::os::unix::io::FromRawFd;
    let mut bridge = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(3) });
    for _ in 0..64 {
        let _ = bridge.write_all(b"3:rb1");
    }
    std::process::exit(0)
}
""",
        "tests": CLOSE_TESTS,
        "setup_code": "",
    },
    {
        "name": "malformed_reply_on_descriptor_3",
        "why": (
            "answers a bool call with replies that are not a bool ('ri1;', a string, trailing "
            "bytes after b1, a frame cut short) and exits 0: a stub must fail on a reply that "
            "does not decode exactly into the declared type, never default it"
        ),
        "prompt": CLOSE_PROMPT,
        "response": """    use std::io::Write;
    use std::os::unix::io::FromRawFd;
    let mut bridge = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(3) });
    let _ = bridge.write_all(b"4:ri1;6:rs2:ok4:rb1x9:rb1");
    std::process::exit(0)
}
""",
        "tests": CLOSE_TESTS,
        "setup_code": "",
    },
]
