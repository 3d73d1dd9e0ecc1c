package dev.layover.core.provider;

import java.math.BigDecimal;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Decides the {@link FailureClass} from the status and what the body said. The order is the one
 * documented in {@code docs/provider-classification.md}: a request that can never fit, then
 * quota, auth, overload, rate-limit and transient signals of the body, then the status.
 */
final class Rules {

    /** What {@link #decide} found. */
    record Verdict(FailureClass failureClass, QuotaReset quotaReset) {}

    /** How the reset of a spent quota is known, when the body alone tells. */
    enum QuotaReset {
        /** Nothing in the body says; fall back on the wait the response asked for. */
        FROM_WAIT,
        /** Gemini per-day quotas reset at midnight Pacific time. */
        NEXT_PACIFIC_MIDNIGHT,
        /** Anthropic's usage-tier spend limit pauses until 00:00 UTC on the 1st of next month. */
        NEXT_MONTH_UTC
    }

    private static final Set<String> QUOTA_TOKENS = Set.of(
            // OpenAI / Azure OpenAI billing and quota codes (error.type or error.code)
            "insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "credit_balance_exhausted",
            "organization_spend_limit_exceeded", "project_spend_limit_exceeded",
            "organization_usage_limit_exceeded",
            // Anthropic error.type and error.details.error_code
            "billing_error", "enforced_spend_limit_reached", "contract_spend_limit_reached",
            "linked_organization_spend_limit_reached", "linked_organization_billing_unavailable",
            // Bedrock
            "servicequotaexceededexception");

    private static final Set<String> AUTH_TOKENS = Set.of(
            "invalid_api_key", "invalid_authentication", "authentication_error", "permission_error",
            "permission_denied", "unauthenticated", "unauthorized", "organization_on_hold",
            "api_key_invalid", "api_key_expired",
            "accessdeniedexception", "unrecognizedclientexception", "invalidsignatureexception",
            "expiredtokenexception", "invalidclienttokenid", "missingauthenticationtoken",
            "missingauthenticationtokenexception", "incompletesignature", "notauthorized");

    private static final Set<String> OVERLOAD_TOKENS = Set.of(
            "overloaded_error", "unavailable", "service_unavailable", "server_overloaded", "engine_overloaded",
            "modelnotreadyexception", "serviceunavailableexception");

    private static final Set<String> RATE_TOKENS = Set.of(
            "rate_limit_error", "rate_limit_exceeded", "ratelimitexceeded", "too_many_requests", "resource_exhausted",
            "ramp_limit_exceeded", "throttlingexception", "toomanyrequestsexception", "throttling");

    private static final Set<String> TRANSIENT_TOKENS = Set.of(
            "api_error", "server_error", "timeout_error", "internal_error", "internal", "deadline_exceeded",
            "aborted", "conflict_error", "internalserverexception", "internalfailure", "modeltimeoutexception",
            "modelstreamerrorexception", "modelerrorexception");

    private static final Set<String> BAD_TOKENS = Set.of(
            "invalid_request_error", "not_found_error", "request_too_large", "invalid_argument", "not_found",
            "failed_precondition", "out_of_range", "context_length_exceeded", "content_filter", "model_not_found",
            "validationexception", "resourcenotfoundexception");

    /** "Request too large for gpt-4o ... on tokens per min (TPM): Limit 30000, Requested 52344." */
    private static final Pattern LIMIT_REQUESTED = Pattern.compile(
            "limit:?\\s*([\\d,]{1,20}(?:\\.\\d{1,12})?)[^.]{0,80}?requested:?\\s*([\\d,]{1,20}(?:\\.\\d{1,12})?)",
            Pattern.CASE_INSENSITIVE);

    private Rules() {}

    static Verdict decide(int status, ErrorDetails d) {
        String type = lower(d.type());
        String code = lower(d.code());
        String gStatus = lower(d.status());
        String msg = lower(d.message());
        boolean fromBody = d.streamError() || (status >= 200 && status < 300);
        int st = fromBody && d.embeddedStatus() != 0 ? d.embeddedStatus() : status;
        if (fromBody && d.embeddedStatus() == 0) {
            st = 0; // a 200 around an error event says nothing about the error
        }

        if (msg != null && neverFits(msg)) {
            return new Verdict(FailureClass.BAD_REQUEST, null);
        }

        // ---- quota: 429s (and some 400s/402s) that waiting a minute will not cure
        boolean rateContext = st == 429 || any(RATE_TOKENS, type, code, gStatus);
        if (!d.quotaIds().isEmpty() && d.quotaIds().stream().anyMatch(id -> id.contains("PerDay"))) {
            return new Verdict(FailureClass.QUOTA_EXHAUSTED, QuotaReset.NEXT_PACIFIC_MIDNIGHT);
        }
        if ("enforced_spend_limit_reached".equals(code) || "enforced_spend_limit_reached".equals(type)) {
            return new Verdict(FailureClass.QUOTA_EXHAUSTED, QuotaReset.NEXT_MONTH_UTC);
        }
        if (any(QUOTA_TOKENS, type, code, gStatus) || st == 402) {
            return new Verdict(FailureClass.QUOTA_EXHAUSTED, QuotaReset.FROM_WAIT);
        }
        if (msg != null) {
            if (msg.contains("credit balance is too low") || msg.contains("prepayment credits are depleted")
                    || msg.contains("credits are depleted") || msg.contains("regain access on")
                    || msg.contains("api usage limits") || msg.contains("spend limit")) {
                return new Verdict(FailureClass.QUOTA_EXHAUSTED, QuotaReset.FROM_WAIT);
            }
            if (rateContext && (msg.contains("per day") || msg.contains("(rpd)") || msg.contains("(tpd)")
                    || msg.contains("daily limit") || msg.contains("per-day"))) {
                return new Verdict(FailureClass.QUOTA_EXHAUSTED, QuotaReset.FROM_WAIT);
            }
        }

        // ---- auth
        if (any(AUTH_TOKENS, type, code, gStatus)
                || d.reasons().stream().anyMatch(r -> AUTH_TOKENS.contains(lower(r)))
                || (msg != null && (msg.contains("api key not valid") || msg.contains("incorrect api key provided")))) {
            return new Verdict(FailureClass.AUTH_REFUSED, null);
        }

        // ---- what the body says
        if (any(OVERLOAD_TOKENS, type, code, gStatus) || st == 529 || st == 503) {
            return new Verdict(FailureClass.OVERLOADED, null);
        }
        if (any(RATE_TOKENS, type, code, gStatus)) {
            return new Verdict(FailureClass.RATE_LIMITED, null);
        }
        if (any(TRANSIENT_TOKENS, type, code, gStatus)) {
            return new Verdict(FailureClass.TRANSIENT, null);
        }
        if (fromBody && st == 0 && msg != null && msg.contains("overloaded")) {
            return new Verdict(FailureClass.OVERLOADED, null);
        }

        // ---- the status
        if (st == 401 || st == 403) {
            return new Verdict(FailureClass.AUTH_REFUSED, null);
        }
        if (st == 429) {
            return new Verdict(FailureClass.RATE_LIMITED, null);
        }
        if ((st >= 500 && st <= 599) || st == 408 || st == 409 || st == 425) {
            return new Verdict(FailureClass.TRANSIENT, null);
        }
        if (any(BAD_TOKENS, type, code, gStatus)) {
            return new Verdict(FailureClass.BAD_REQUEST, null);
        }
        if (st >= 400 && st <= 499) {
            return new Verdict(FailureClass.BAD_REQUEST, null);
        }
        return new Verdict(FailureClass.TRANSIENT, null);
    }

    /** The conservative class for a bare status, used when nothing else can be read. */
    static FailureClass byStatus(int status) {
        return decide(status, ErrorDetails.NONE).failureClass();
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

    private static boolean any(Set<String> tokens, String... values) {
        for (String v : values) {
            if (v != null && tokens.contains(v)) {
                return true;
            }
        }
        return false;
    }

    static String lower(String s) {
        return s == null ? null : s.trim().toLowerCase(Locale.ROOT);
    }
}
