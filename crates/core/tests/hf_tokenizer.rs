//! The `hf-tokenizer` feature: `--encoding <path to tokenizer.json>` loads a HuggingFace
//! tokenizer from disk (never a download) and counts with it. The tokenizers under
//! `tests/data/` are written by hand, a few tokens each, so the expected counts can be worked
//! out on paper.

use mcp_budget_core::tokens::{Encoding, EncodingError};

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn unknown_name_that_is_no_file_is_unknown() {
    let err = "no/such/tokenizer.json".parse::<Encoding>().unwrap_err();
    assert!(matches!(err, EncodingError::Unknown(_)), "{err}");
}

#[cfg(not(feature = "hf-tokenizer"))]
#[test]
fn tokenizer_path_without_the_feature_says_the_feature_is_off() {
    let path = data("tiny_wordlevel.tokenizer.json");
    let err = path.parse::<Encoding>().unwrap_err();
    assert!(matches!(err, EncodingError::HfFeatureOff(_)), "{err}");
    assert!(err.to_string().contains("hf-tokenizer"), "{err}");
}

#[cfg(feature = "hf-tokenizer")]
mod with_feature {
    use super::*;

    fn load(name: &str) -> Encoding {
        let path = data(name);
        match path.parse::<Encoding>() {
            Ok(encoding) => encoding,
            Err(e) => panic!("{path}: {e}"),
        }
    }

    #[test]
    fn wordlevel_counts_words_and_punctuation_without_special_tokens() {
        let enc = load("tiny_wordlevel.tokenizer.json");
        assert!(matches!(enc, Encoding::HuggingFace(_)));
        assert!(enc.name().ends_with("tiny_wordlevel.tokenizer.json"));
        // Lowercase normalizer, Whitespace pre-tokenizer (`\w+|[^\w\s]+`): hello , world !
        assert_eq!(enc.count("Hello, World!"), 4);
        assert_eq!(enc.count(""), 0);
        // Unknown words become [UNK], one token each; "!!" is one piece, unknown.
        assert_eq!(enc.count("goodbye cruel world!!"), 4);
    }

    #[test]
    fn truncation_and_padding_of_the_file_are_ignored() {
        // The file asks for truncation at 3 tokens and padding to 16: a count must be neither.
        let enc = load("tiny_wordlevel.tokenizer.json");
        let text = "hello world hello world hello world hello";
        assert_eq!(enc.count(text), 7);
        assert_eq!(enc.count("hello"), 1);
    }

    #[test]
    fn bpe_merges_apply_and_nfkc_can_expand_the_text() {
        let enc = load("tiny_bpe.tokenizer.json");
        assert_eq!(enc.count("hello"), 1);
        assert_eq!(enc.count("hell he"), 2);
        // h o l e: no merge applies.
        assert_eq!(enc.count("hole"), 4);
        // One 3-byte character, four tokens after NFKC: the bytes bound does not hold here,
        // so `fits` must tokenize instead of trusting the byte length.
        assert_eq!("㍿".len(), 3);
        assert_eq!(enc.count("㍿"), 4);
        assert!(!enc.bytes_bound_tokens());
        assert!(!enc.fits("㍿", 3));
        assert!(enc.fits("㍿", 4));
        assert_eq!(enc.count_till_limit("㍿", 3), None);
        assert_eq!(enc.count_till_limit("㍿", 4), Some(4));
    }

    #[test]
    fn count_till_limit_and_fits_agree_with_count() {
        let enc = load("tiny_bpe.tokenizer.json");
        for text in [
            "",
            "hello hello",
            "hole in the hull",
            "株式会社 hello",
            "x y z w",
        ] {
            let n = enc.count(text);
            assert_eq!(enc.count_till_limit(text, n), Some(n), "{text:?}");
            assert!(enc.fits(text, n), "{text:?}");
            if n > 0 {
                assert_eq!(enc.count_till_limit(text, n - 1), None, "{text:?}");
                assert!(!enc.fits(text, n - 1), "{text:?}");
            }
        }
    }

    #[test]
    fn from_tokenizer_json_loads_bytes_without_a_file() {
        let json = include_bytes!("data/tiny_wordlevel.tokenizer.json");
        let enc = Encoding::from_tokenizer_json("tiny", json).expect("valid tokenizer.json");
        assert_eq!(enc.name(), "tiny");
        assert_eq!(enc.to_string(), "tiny");
        assert_eq!(enc.count("hello world"), 2);
    }

    #[test]
    fn a_file_that_is_not_a_tokenizer_is_a_load_error() {
        let err = data("fs_tools.rpc.json").parse::<Encoding>().unwrap_err();
        assert!(matches!(err, EncodingError::HfLoad { .. }), "{err}");
        let err = Encoding::from_tokenizer_json("junk", b"{\"model\":42}").unwrap_err();
        assert!(matches!(err, EncodingError::HfLoad { .. }), "{err}");
    }
}
