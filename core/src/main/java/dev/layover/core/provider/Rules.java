package dev.layover.core.provider;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Decides the {@link FailureClass} from the status and what the body said, by the rows of the rule
 * tables ({@link ProviderRules}): an application's rows first, then a request that can never fit,
 * then the built-in rows ({@value ProviderRules#RESOURCE}), in order; what no row matches is
 * TRANSIENT. Also tells which provider answered, by the tables' detect rows.
 */
final class Rules {

    /** What {@link #decide} found. */
    record Verdict(FailureClass failureClass, Row.Reset quotaReset) {}

    /** Longest text the words of the rows are looked for in. */
    private static final int MAX_TEXT = 8192;

    /** "Request too large for gpt-4o ... on tokens per min (TPM): Limit 30000, Requested 52344." */
    private static final Pattern LIMIT_REQUESTED = Pattern.compile(
            "limit:?\\s*([\\d,]{1,20}(?:\\.\\d{1,12})?)[^.]{0,80}?requested:?\\s*([\\d,]{1,20}(?:\\.\\d{1,12})?)",
            Pattern.CASE_INSENSITIVE);

    private Rules() {}

    static Verdict decide(ProviderRules application, Provider provider, int status, HeaderMap headers,
            ErrorDetails d) {
        Row.Facts f = facts(provider, status, headers, d);
        Verdict v = first(application, f);
        if (v != null) {
            return v;
        }
        String msg = lower(d.message());
        if (msg != null && neverFits(msg)) {
            return new Verdict(FailureClass.BAD_REQUEST, null);
        }
        v = first(ProviderRules.builtIn(), f);
        return v != null ? v : new Verdict(FailureClass.TRANSIENT, null);
    }

    /**
     * The provider a response comes from: the hint, unless it is absent, {@code UNKNOWN} or
     * {@code OPENAI} (what openai-java reports, whatever server it was pointed at) and a detect row
     * recognises the server in the response.
     */
    static Provider detect(ProviderRules application, Provider hint, HeaderMap headers, ErrorDetails d) {
        Provider p = hint == null ? Provider.UNKNOWN : hint;
        if (p != Provider.UNKNOWN && p != Provider.OPENAI) {
            return p;
        }
        Row.Facts f = facts(p, 0, headers, d);
        for (ProviderRules table : List.of(application, ProviderRules.builtIn())) {
            for (Row.Detect row : table.detects()) {
                if (row.test(f)) {
                    return row.provider();
                }
            }
        }
        return p;
    }

    /** The conservative class for a bare status, used when nothing else can be read. */
    static FailureClass byStatus(int status) {
        return decide(ProviderRules.empty(), Provider.UNKNOWN, status, HeaderMap.EMPTY, ErrorDetails.NONE)
                .failureClass();
    }

    /** A request asking for more than the per-minute limit can ever grant: "Limit X, Requested Y", Y > X. */
    static boolean neverFits(String msg) {
        if (!msg.contains("requested") || !msg.contains("limit")) {
            return false;
        }
        Matcher m = LIMIT_REQUESTED.matcher(msg);
        if (!m.find()) {
            return false;
        }
        try {
            BigDecimal limit = new BigDecimal(m.group(1).replace(",", ""));
            BigDecimal requested = new BigDecimal(m.group(2).replace(",", ""));
            return requested.compareTo(limit) > 0;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    static String lower(String s) {
        return s == null ? null : s.trim().toLowerCase(Locale.ROOT);
    }

    private static Verdict first(ProviderRules table, Row.Facts f) {
        for (Row.Match row : table.matches()) {
            if (row.test(f)) {
                return new Verdict(row.cls(), row.reset());
            }
        }
        return null;
    }

    /**
     * What the rows test. The status is the response's, except for an error found inside a 2xx or a
     * stream: there the error's own status counts (a Gemini chunk's {@code error.code}), or none (0).
     */
    private static Row.Facts facts(Provider provider, int status, HeaderMap headers, ErrorDetails d) {
        boolean fromBody = d.streamError() || (status >= 200 && status < 300);
        int st = fromBody ? d.embeddedStatus() : status;
        List<String> reasons = new ArrayList<>(d.reasons().size());
        for (String r : d.reasons()) {
            reasons.add(lower(r));
        }
        List<String> quotaIds = new ArrayList<>();
        for (String id : d.quotaIds()) {
            quotaIds.add(lower(id));
        }
        return new Row.Facts(provider, st, lower(d.type()), lower(d.code()), lower(d.status()), reasons,
                text(d), quotaIds, headers, d.streamError());
    }

    /** The message, the text of a non-JSON body and a gateway's quote of the upstream, lower case. */
    private static String text(ErrorDetails d) {
        StringBuilder b = new StringBuilder();
        for (String part : new String[] {d.message(), d.rawText(), d.detail()}) {
            if (part != null && b.length() < MAX_TEXT) {
                b.append(part, 0, Math.min(part.length(), MAX_TEXT - b.length())).append('\n');
            }
        }
        return b.length() == 0 ? null : b.toString().toLowerCase(Locale.ROOT);
    }
}
