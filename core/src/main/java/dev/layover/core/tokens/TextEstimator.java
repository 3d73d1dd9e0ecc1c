package dev.layover.core.tokens;

import java.util.List;

/**
 * Estimates tokens from the text alone, for providers whose tokenizer is not public (Anthropic,
 * Gemini, Bedrock's models). A flat "characters per token" is badly wrong outside English (a
 * Chinese character is about one token, an English word about one), so the text is read in runs
 * of one script, and each run costs what byte-pair tokenizers typically spend on it:
 *
 * <ul>
 *   <li>a word in Latin letters: one token per {@value #LATIN_CHARS_PER_TOKEN} letters (at least
 *       one), fewer letters per token the larger the share of the text's words with accents
 *       (down to {@value #MIN_LATIN_CHARS_PER_TOKEN}: German, Polish or Turkish words are split
 *       into more pieces than English ones), and {@value #LATIN_EXTRA_PER_ACCENT} more per
 *       accented letter;
 *   <li>a word in Cyrillic, Greek, Armenian, Georgian, Arabic or Hebrew letters: one token per
 *       1.3 to 2.75 letters, by script;
 *   <li>Devanagari and the other Brahmic scripts, Thai and its neighbours, Chinese characters,
 *       kana and Hangul: 0.6 to 1 token per character, by script;
 *   <li>digits: one token per three; a lone space before a word is free, any other run of
 *       whitespace one token; a run of punctuation 0.6 tokens per mark (at least one; the mark
 *       just before a word mostly merges into it); other symbols (emoji) two tokens each.
 * </ul>
 *
 * <p>The costs were set so the estimate lands between the counts of two real byte-pair
 * tokenizers of different vocabulary sizes ({@code cl100k_base} and {@code o200k_base}, their
 * geometric mean) on a corpus of 20 kinds of text (16 languages, code, JSON, tables, mixed);
 * {@code EstimateErrorTest} measures it against each and {@code docs/tokens.md} gives the error.
 * No provider's own count is matched: give the estimate to a {@link CalibratedEstimator}, which
 * learns each key's ratio from the usage its calls report.
 *
 * <p>A chat prompt adds {@value #TOKENS_PER_MESSAGE} tokens per message and
 * {@value #REPLY_PRIMING} for the reply. Immutable and thread-safe; linear in the text's length.
 */
public final class TextEstimator implements TokenEstimator {

    /** Latin letters one token covers in a word. */
    public static final double LATIN_CHARS_PER_TOKEN = 6.5;

    /** Extra tokens per non-ASCII Latin letter (accents break byte-pair merges). */
    public static final double LATIN_EXTRA_PER_ACCENT = 0.45;

    /** The fewest Latin letters per token, for a text whose words all carry accents. */
    public static final double MIN_LATIN_CHARS_PER_TOKEN = 3.3;

    /** How fast letters per token fall with the share of words that carry accents. */
    static final double ACCENT_SHARE_SLOPE = 12.0;

    /** Tokens a chat format adds around each message. */
    public static final int TOKENS_PER_MESSAGE = 4;

    /** Tokens a chat format adds to prime the reply. */
    public static final int REPLY_PRIMING = 3;

    private static final TextEstimator DEFAULTS = new TextEstimator();

    private TextEstimator() {}

    /**
     * The shared estimator.
     *
     * @return the estimator
     */
    public static TextEstimator defaults() {
        return DEFAULTS;
    }

    /** Scripts read as one run, each with its cost. */
    private enum Run {
        LATIN, CYRILLIC, GREEK, ARMENIAN_GEORGIAN, ARABIC, HEBREW, BRAHMIC, SOUTHEAST_ASIAN, HAN, KANA, HANGUL,
        DIGIT, WHITESPACE, PUNCTUATION, SYMBOL
    }

    @Override
    public long textTokens(String text) {
        if (text == null || text.isEmpty()) {
            return 0;
        }
        double latinCharsPerToken = latinCharsPerToken(text);
        double tokens = 0;
        int n = text.length();
        int i = 0;
        while (i < n) {
            int cp = text.codePointAt(i);
            Run run = run(cp);
            int length = 0;
            int accents = 0;
            boolean newline = false;
            int j = i;
            while (j < n) {
                int c = text.codePointAt(j);
                boolean mark = length > 0 && isWordRun(run) && isMark(c);
                if (run(c) != run && !mark) {
                    break;
                }
                length++;
                if (run == Run.LATIN && c > 0x7F) {
                    accents++;
                }
                newline |= c == '\n' || c == '\r';
                j += Character.charCount(c);
            }
            int next = j < n ? text.codePointAt(j) : ' ';
            boolean joinsNext = run == Run.WHITESPACE ? length == 1 && !newline && !Character.isDigit(next)
                    : Character.isLetter(next);
            tokens += cost(run, length, accents, latinCharsPerToken, joinsNext);
            i = j;
        }
        return (long) Math.ceil(tokens);
    }

    /**
     * Latin letters per token in this text's words: {@link #LATIN_CHARS_PER_TOKEN} for English
     * and code, fewer the more words carry accents (German, Polish, Turkish: their words are
     * split into more pieces than English ones, accented or not).
     */
    private static double latinCharsPerToken(String text) {
        int words = 0;
        int accented = 0;
        boolean inWord = false;
        boolean hasAccent = false;
        for (int i = 0; i < text.length(); ) {
            int c = text.codePointAt(i);
            boolean latin = c < 0x80 ? (c | 0x20) >= 'a' && (c | 0x20) <= 'z'
                    : Character.isLetter(c) && Character.UnicodeScript.of(c) == Character.UnicodeScript.LATIN;
            if (latin) {
                hasAccent |= c > 0x7F;
                inWord = true;
            } else if (inWord) {
                words++;
                accented += hasAccent ? 1 : 0;
                inWord = false;
                hasAccent = false;
            }
            i += Character.charCount(c);
        }
        if (inWord) {
            words++;
            accented += hasAccent ? 1 : 0;
        }
        double share = words == 0 ? 0 : (double) accented / words;
        return Math.max(MIN_LATIN_CHARS_PER_TOKEN, LATIN_CHARS_PER_TOKEN - ACCENT_SHARE_SLOPE * share);
    }

    @Override
    public long messageTokens(List<ChatMessage> messages) {
        long tokens = REPLY_PRIMING;
        if (messages == null) {
            return tokens;
        }
        for (ChatMessage m : messages) {
            if (m != null) {
                tokens += TOKENS_PER_MESSAGE + textTokens(m.content()) + (m.name() == null ? 0 : textTokens(m.name()));
            }
        }
        return tokens;
    }

    /**
     * The tokens of one run; {@code joinsNext}: a lone space before a word or a mark just before a
     * letter, which byte-pair tokenizers merge into the next token.
     */
    private static double cost(Run run, int length, int accents, double latinCharsPerToken, boolean joinsNext) {
        return switch (run) {
            case LATIN -> Math.max(1.0, length / latinCharsPerToken) + LATIN_EXTRA_PER_ACCENT * accents;
            case CYRILLIC -> Math.max(1.0, length / 2.75);
            case GREEK -> Math.max(1.0, length / 1.5);
            case ARMENIAN_GEORGIAN -> Math.max(1.0, length / 1.3);
            case ARABIC -> Math.max(1.0, length / 2.0);
            case HEBREW -> Math.max(1.0, length / 1.52);
            case BRAHMIC -> length * 0.65;
            case SOUTHEAST_ASIAN -> length * 0.62;
            case HAN -> length * 1.0;
            case KANA -> length * 0.83;
            case HANGUL -> length * 0.95;
            case DIGIT -> Math.ceil(length / 3.0);
            // a lone space joins the next word (not a number, nor after a line break); other runs are
            // about one token
            case WHITESPACE -> joinsNext ? 0 : 1 + length / 32;
            case PUNCTUATION -> joinsNext ? Math.max(0.45, 0.6 * (length - 1)) : Math.max(1.0, 0.6 * length);
            case SYMBOL -> length * 2.0;
        };
    }

    private static boolean isWordRun(Run run) {
        return switch (run) {
            case LATIN, CYRILLIC, GREEK, ARMENIAN_GEORGIAN, ARABIC, HEBREW, BRAHMIC, SOUTHEAST_ASIAN -> true;
            default -> false;
        };
    }

    private static boolean isMark(int cp) {
        int type = Character.getType(cp);
        return type == Character.NON_SPACING_MARK || type == Character.COMBINING_SPACING_MARK
                || type == Character.ENCLOSING_MARK;
    }

    private static Run run(int cp) {
        if (cp < 0x80) {
            if (cp >= 'a' && cp <= 'z' || cp >= 'A' && cp <= 'Z') {
                return Run.LATIN;
            }
            if (cp >= '0' && cp <= '9') {
                return Run.DIGIT;
            }
            if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') {
                return Run.WHITESPACE;
            }
            return Run.PUNCTUATION;
        }
        if (Character.isWhitespace(cp) || Character.isSpaceChar(cp)) {
            return Run.WHITESPACE;
        }
        if (Character.isDigit(cp)) {
            return Run.DIGIT;
        }
        Character.UnicodeScript script;
        try {
            script = Character.UnicodeScript.of(cp);
        } catch (IllegalArgumentException e) {
            return Run.SYMBOL;
        }
        return switch (script) {
            case LATIN -> Run.LATIN;
            case CYRILLIC -> Run.CYRILLIC;
            case GREEK -> Run.GREEK;
            case ARMENIAN, GEORGIAN -> Run.ARMENIAN_GEORGIAN;
            case ARABIC, SYRIAC, THAANA -> Run.ARABIC;
            case HEBREW -> Run.HEBREW;
            case DEVANAGARI, BENGALI, GURMUKHI, GUJARATI, ORIYA, TAMIL, TELUGU, KANNADA, MALAYALAM, SINHALA,
                    TIBETAN, ETHIOPIC -> Run.BRAHMIC;
            case THAI, LAO, KHMER, MYANMAR -> Run.SOUTHEAST_ASIAN;
            case HAN, BOPOMOFO -> Run.HAN;
            case HIRAGANA, KATAKANA -> Run.KANA;
            case HANGUL -> Run.HANGUL;
            default -> Character.isLetter(cp) ? Run.CYRILLIC
                    : Character.getType(cp) == Character.OTHER_PUNCTUATION
                            || Character.getType(cp) == Character.START_PUNCTUATION
                            || Character.getType(cp) == Character.END_PUNCTUATION
                            || Character.getType(cp) == Character.DASH_PUNCTUATION
                            || Character.getType(cp) == Character.INITIAL_QUOTE_PUNCTUATION
                            || Character.getType(cp) == Character.FINAL_QUOTE_PUNCTUATION ? Run.PUNCTUATION
                    : Run.SYMBOL;
        };
    }
}
