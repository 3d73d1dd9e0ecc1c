package dev.layover.core.internal.observe;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Hides what looks like a secret in text Layover stores on its own (a failed attempt's stack
 * trace): {@code Bearer xxx} / {@code Basic xxx}, {@code sk-...} keys (OpenAI, Anthropic),
 * Google {@code AIza...} keys, AWS {@code AKIA...}/{@code ASIA...} ids, Slack {@code xox.-...}
 * tokens, JWTs, {@code key=...} query parameters, and {@code name=value} / {@code "name": "value"}
 * pairs whose name looks sensitive (token, secret, password, api key, authorization, credential,
 * private key, access key). Each secret becomes {@value #MASK}; what identifies it (the scheme, the
 * {@code sk-} prefix, the name) stays readable.
 */
public final class SecretMask {

    /** What a secret is replaced with. */
    public static final String MASK = "[masked]";

    private static final Pattern SCHEME = Pattern.compile("(?i)\\b(Bearer|Basic)(\\s+)(?!\\[masked\\])([A-Za-z0-9._~+/=-]{4,})");
    private static final Pattern KEYS = Pattern.compile(
            "\\b(sk-(?:ant-|proj-|live-|test-)?)[A-Za-z0-9_-]{6,}"
                    + "|\\b(AIza)[0-9A-Za-z_-]{20,}"
                    + "|\\b(AKIA|ASIA)[0-9A-Z]{12,}"
                    + "|\\b(xox[abprs]-)[A-Za-z0-9-]{6,}");
    private static final Pattern JWT = Pattern.compile("\\beyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{4,}");
    /** {@code ?key=...} / {@code &key=...}: Gemini's API key in a URL. */
    private static final Pattern QUERY_KEY = Pattern.compile("(?i)([?&;](?:key|api_key|apikey|access_token|token|sig|signature)=)(?!\\[masked\\])[^&\\s\"'#]+");
    private static final Pattern PAIR = Pattern.compile(
            "(?i)((?<![A-Za-z0-9])(?:[a-z0-9]+[-_])*(?:token|secret|password|passwd|api[-_ ]?key|apikey|authorization"
                    + "|credentials?|private[-_]?key|access[-_]?key)(?:[-_][a-z0-9]+)*[\"']?\\s*[:=]\\s*[\"']?)"
                    + "(?!\\[masked\\])(?!(?:Bearer|Basic)\\b)([^\\s\"',;&}\\]]+)");

    private SecretMask() {}

    /**
     * @param text any text, or null
     * @return the text with secret-looking parts replaced by {@value #MASK} (null stays null)
     */
    public static String mask(String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        // named values first, so a named key is masked whole rather than after its prefix
        String s = SCHEME.matcher(text).replaceAll("$1$2" + Matcher.quoteReplacement(MASK));
        s = PAIR.matcher(s).replaceAll("$1" + Matcher.quoteReplacement(MASK));
        s = QUERY_KEY.matcher(s).replaceAll("$1" + Matcher.quoteReplacement(MASK));
        Matcher m = KEYS.matcher(s);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String prefix = m.group(1) != null ? m.group(1) : m.group(2) != null ? m.group(2)
                    : m.group(3) != null ? m.group(3) : m.group(4);
            m.appendReplacement(out, Matcher.quoteReplacement(prefix + MASK));
        }
        m.appendTail(out);
        return JWT.matcher(out.toString()).replaceAll(Matcher.quoteReplacement(MASK));
    }
}
