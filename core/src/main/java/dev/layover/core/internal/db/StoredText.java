package dev.layover.core.internal.db;

/**
 * Text as Layover stores it: error messages and details cut to a bounded length, never a split
 * surrogate pair, and NUL characters (which Postgres {@code text} and {@code jsonb} refuse)
 * replaced by U+FFFD, so that no message can fail the write that records it.
 */
public final class StoredText {

    /** Error messages are stored cut to this many characters. */
    public static final int MAX_MESSAGE = 2000;

    private StoredText() {}

    /**
     * @param s a text, or null
     * @return at most {@link #MAX_MESSAGE} characters (the last one an ellipsis when cut), cleaned
     */
    public static String cut(String s) {
        return cut(s, MAX_MESSAGE);
    }

    /**
     * @param s a text, or null
     * @param max the longest result
     * @return at most {@code max} characters (the last one an ellipsis when cut), cleaned
     */
    public static String cut(String s, int max) {
        if (s == null) {
            return null;
        }
        String c = s;
        if (c.length() > max) {
            int end = max - 1;
            if (Character.isHighSurrogate(c.charAt(end - 1))) {
                end--;
            }
            c = c.substring(0, end) + "…";
        }
        return clean(c);
    }

    /**
     * @param s a text
     * @return {@code s} with NUL and unpaired surrogates replaced by U+FFFD; {@code s} itself when
     *     there are none
     */
    public static String clean(String s) {
        StringBuilder b = null;
        int n = s.length();
        for (int i = 0; i < n; i++) {
            char ch = s.charAt(i);
            boolean bad;
            if (ch == 0) {
                bad = true;
            } else if (Character.isHighSurrogate(ch)) {
                bad = i + 1 >= n || !Character.isLowSurrogate(s.charAt(i + 1));
                if (!bad) {
                    if (b != null) {
                        b.append(ch).append(s.charAt(i + 1));
                    }
                    i++;
                    continue;
                }
            } else {
                bad = Character.isLowSurrogate(ch);
            }
            if (bad && b == null) {
                b = new StringBuilder(n).append(s, 0, i);
            }
            if (b != null) {
                b.append(bad ? '\uFFFD' : ch);
            }
        }
        return b == null ? s : b.toString();
    }

    /**
     * @param s a text, or null
     * @return whether Postgres would refuse it in a {@code text} value (a NUL or a lone surrogate)
     */
    public static boolean unstorable(String s) {
        return s != null && clean(s) != s;
    }
}
