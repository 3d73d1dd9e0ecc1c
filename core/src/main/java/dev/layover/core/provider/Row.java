package dev.layover.core.provider;

import java.util.List;
import java.util.Locale;
import java.util.Set;

/** The rows of a {@link ProviderRules} table and the conditions they test, read by {@link Rules}. */
final class Row {

    private Row() {}

    /** What one response offers the conditions, computed once per classification. */
    record Facts(Provider provider, int status, String type, String code, String errorStatus, List<String> reasons,
            String text, List<String> quotaIds, HeaderMap headers, boolean stream) {}

    /** One condition of a when column. */
    interface Condition {
        boolean test(Facts f);
    }

    /** {@code token=}, {@code type=}, {@code code=}, {@code error-status=}, {@code reason=}. */
    record Token(String field, Set<String> values) implements Condition {
        @Override
        public boolean test(Facts f) {
            return switch (field) {
                case "type" -> in(f.type());
                case "code" -> in(f.code());
                case "error-status" -> in(f.errorStatus());
                case "reason" -> f.reasons().stream().anyMatch(this::in);
                default -> in(f.type()) || in(f.code()) || in(f.errorStatus()) || f.reasons().stream().anyMatch(this::in);
            };
        }

        private boolean in(String v) {
            return v != null && values.contains(v);
        }
    }

    /** {@code message~}: the response's text contains one of the words. */
    record Words(List<String> words) implements Condition {
        @Override
        public boolean test(Facts f) {
            if (f.text() == null) {
                return false;
            }
            for (String w : words) {
                if (f.text().contains(w)) {
                    return true;
                }
            }
            return false;
        }
    }

    /** {@code quota-id~}: a Google QuotaFailure quota id contains one of the words. */
    record QuotaId(List<String> words) implements Condition {
        @Override
        public boolean test(Facts f) {
            for (String id : f.quotaIds()) {
                for (String w : words) {
                    if (id.contains(w)) {
                        return true;
                    }
                }
            }
            return false;
        }
    }

    /** {@code header:NAME}, {@code header:NAME=VALUES}, {@code header:NAME~VALUES}; a trailing '*' is a prefix. */
    record Header(String name, Character op, List<String> values) implements Condition {
        @Override
        public boolean test(Facts f) {
            if (name.endsWith("*")) {
                String prefix = name.substring(0, name.length() - 1).toLowerCase(Locale.ROOT);
                for (String n : f.headers().names()) {
                    if (n.toLowerCase(Locale.ROOT).startsWith(prefix) && matches(f.headers().all(n))) {
                        return true;
                    }
                }
                return false;
            }
            return f.headers().has(name) && matches(f.headers().all(name));
        }

        private boolean matches(List<String> headerValues) {
            if (op == null) {
                return true;
            }
            for (String hv : headerValues) {
                String v = hv.strip().toLowerCase(Locale.ROOT);
                for (String want : values) {
                    if (op == '=' ? v.equals(want) : v.contains(want)) {
                        return true;
                    }
                }
            }
            return false;
        }
    }

    /** {@code stream}: the error was found inside a stream. */
    record Stream() implements Condition {
        @Override
        public boolean test(Facts f) {
            return f.stream();
        }
    }

    /** A status column: ranges, inclusive. */
    record Statuses(List<int[]> ranges) {
        boolean contains(int status) {
            for (int[] r : ranges) {
                if (status >= r[0] && status <= r[1]) {
                    return true;
                }
            }
            return false;
        }
    }

    /** How a spent quota's reset is known when the response states none. */
    enum Reset {
        /** A stated date, else the wait the response asked for. */
        WAIT,
        /** Gemini per-day quotas reset at midnight Pacific time. */
        PACIFIC_MIDNIGHT,
        /** Daily limits counted in UTC days (OpenRouter's free models and daily key limits). */
        UTC_MIDNIGHT,
        /** Weekly limits counted in UTC weeks from Monday (OpenRouter's weekly key limits). */
        NEXT_MONDAY_UTC,
        /** Anthropic's usage-tier spend limit pauses until 00:00 UTC on the 1st of next month. */
        NEXT_MONTH_UTC
    }

    /** A match row. {@code providers} and {@code statuses} null: any. */
    record Match(String where, Set<Provider> providers, Statuses statuses, List<Condition> when, FailureClass cls,
            Reset reset) {
        boolean test(Facts f) {
            if (providers != null && !providers.contains(f.provider())) {
                return false;
            }
            if (statuses != null && !statuses.contains(f.status())) {
                return false;
            }
            for (Condition c : when) {
                if (!c.test(f)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** A detect row: the provider a response comes from when all its conditions hold. */
    record Detect(Provider provider, List<Condition> when) {
        boolean test(Facts f) {
            for (Condition c : when) {
                if (!c.test(f)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** How a wait header's value is written. */
    enum Form {
        SECONDS, MILLIS, HTTP_DATE, RFC3339, DURATION, NUMBER, AUTO, STRUCTURED
    }

    /** A wait row: the header, its form, and the header that says whether its limit is spent. */
    record Wait(Set<Provider> providers, String header, Form form, String remaining) {}
}
