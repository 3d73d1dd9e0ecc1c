package dev.layover.core.provider;

import java.time.Instant;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds the token limit a 429 says refused the call, and which tokens it counts, taking the first
 * source present:
 * <ol>
 *   <li>OpenAI's message {@code "... on tokens per min (TPM): Limit 30000, Used 29500, Requested
 *       1200"} (also in "Request too large ... Limit 30000, Requested 52344"): combined tokens;
 *   <li>Anthropic's message {@code "This request would exceed the rate limit for your organization
 *       (...) of 40,000 input tokens per minute"} (or "your organization's rate limit of 80,000
 *       output tokens per minute"): input, output or combined tokens;
 *   <li>Bedrock's message "Too many tokens, please wait before trying again." (a
 *       {@code ThrottlingException}): combined tokens, no number;
 *   <li>Gemini's {@code QuotaFailure}: a per-minute token quota
 *       ({@code GenerateContentInputTokensPerModelPerMinute-FreeTier}) and its {@code quotaValue};
 *   <li>OpenAI's (and Azure's) headers, when the token limit is the one that refused (the error
 *       {@code type} is {@code tokens}, the message says "token rate limit", or
 *       {@code x-ratelimit-remaining-tokens} is 0 while requests remain): {@code x-ratelimit-limit-tokens},
 *       which OpenAI documents as per minute; Azure's {@code -1} means "nothing to report";
 *   <li>Anthropic's headers: the {@code anthropic-ratelimit-{input-tokens,output-tokens,tokens}-*}
 *       limit whose {@code -remaining} is 0 (the one with the latest reset when several are), its
 *       {@code -limit} per minute.
 * </ol>
 * A dimension without a number (OpenAI's "on tokens per min (TPM)" with no headers) is still
 * reported. A per-day token limit is a spent quota, never a pace: nothing. Never throws.
 */
final class TokenLimits {

    /** What was found: a limit per minute (or null) and its dimension (or null: no token limit named). */
    record Found(Double perMinute, TokenDimension dimension) {}

    static final Found NONE = new Found(null, null);

    private static final int MAX_MESSAGE = 4096;

    /** OpenAI: "on tokens per min (TPM): Limit 30000". */
    private static final Pattern OPENAI = Pattern.compile(
            "on tokens per min(?:ute)? \\(TPM\\)(?::\\s*Limit:?\\s*([\\d,]{1,15}))?", Pattern.CASE_INSENSITIVE);

    /** Anthropic: "rate limit for your organization (org) of 40,000 input tokens per minute". */
    private static final Pattern ANTHROPIC = Pattern.compile(
            "rate limit[^.]{0,160}? of ([\\d,]{1,15}) (input |output )?tokens per minute", Pattern.CASE_INSENSITIVE);

    private static final String[] ANTHROPIC_DIMENSIONS = {"input-tokens", "output-tokens", "tokens"};

    private TokenLimits() {}

    static Found find(HeaderMap headers, ErrorDetails d) {
        Found f = fromMessage(d.message());
        if (f.perMinute() == null) {
            Found q = geminiQuota(d);
            if (q.dimension() != null && (f.dimension() == null || f.dimension() == q.dimension())) {
                f = q;
            }
        }
        if (f.perMinute() == null) {
            Found h = openAiHeaders(headers, d, f.dimension());
            if (h.dimension() != null) {
                f = h;
            }
        }
        if (f.perMinute() == null) {
            Found h = anthropicHeaders(headers, f.dimension());
            if (h.dimension() != null) {
                f = h;
            }
        }
        return f;
    }

    /** The limit stated in OpenAI's or Anthropic's message, if any. */
    static Found fromMessage(String message) {
        if (message == null || message.length() > MAX_MESSAGE) {
            return NONE;
        }
        Matcher m = OPENAI.matcher(message);
        if (m.find()) {
            return new Found(number(m.group(1)), TokenDimension.TOKENS);
        }
        m = ANTHROPIC.matcher(message);
        if (m.find()) {
            String kind = m.group(2) == null ? "" : m.group(2).trim().toLowerCase(Locale.ROOT);
            TokenDimension dim = kind.equals("input") ? TokenDimension.INPUT_TOKENS
                    : kind.equals("output") ? TokenDimension.OUTPUT_TOKENS : TokenDimension.TOKENS;
            return new Found(number(m.group(1)), dim);
        }
        if (message.toLowerCase(Locale.ROOT).contains("too many tokens")) {
            return new Found(null, TokenDimension.TOKENS);
        }
        return NONE;
    }

    private static Found geminiQuota(ErrorDetails d) {
        for (ErrorDetails.Quota q : d.quotas()) {
            String id = q.id() == null ? "" : q.id();
            String metric = q.metric() == null ? "" : q.metric().toLowerCase(Locale.ROOT);
            if (!id.contains("PerMinute") || !(id.contains("Tokens") || metric.contains("token"))) {
                continue;
            }
            TokenDimension dim = id.contains("InputTokens") || metric.contains("input_token") ? TokenDimension.INPUT_TOKENS
                    : id.contains("OutputTokens") || metric.contains("output_token") ? TokenDimension.OUTPUT_TOKENS
                    : TokenDimension.TOKENS;
            return new Found(q.value(), dim);
        }
        return NONE;
    }

    private static Found openAiHeaders(HeaderMap headers, ErrorDetails d, TokenDimension named) {
        Long limit = RetryAfter.integer(headers.first("x-ratelimit-limit-tokens"));
        Long remaining = RetryAfter.integer(headers.first("x-ratelimit-remaining-tokens"));
        Long requestsLeft = RetryAfter.integer(headers.first("x-ratelimit-remaining-requests"));
        String msg = d.message() == null ? "" : Rules.lower(d.message());
        boolean tokensRefused = named == TokenDimension.TOKENS || "tokens".equals(Rules.lower(d.type()))
                || msg.contains("token rate limit")
                || (remaining != null && remaining == 0 && (requestsLeft == null || requestsLeft != 0));
        if (!tokensRefused || (named != null && named != TokenDimension.TOKENS)) {
            return NONE;
        }
        Double perMinute = limit != null && limit > 0 ? limit.doubleValue() : null;
        return new Found(perMinute, TokenDimension.TOKENS);
    }

    private static Found anthropicHeaders(HeaderMap headers, TokenDimension named) {
        Found best = NONE;
        Instant bestReset = null;
        for (String dim : ANTHROPIC_DIMENSIONS) {
            TokenDimension d = dim.equals("input-tokens") ? TokenDimension.INPUT_TOKENS
                    : dim.equals("output-tokens") ? TokenDimension.OUTPUT_TOKENS : TokenDimension.TOKENS;
            Long remaining = RetryAfter.integer(headers.first("anthropic-ratelimit-" + dim + "-remaining"));
            Long limit = RetryAfter.integer(headers.first("anthropic-ratelimit-" + dim + "-limit"));
            boolean refused = named != null ? named == d : remaining != null && remaining == 0;
            if (!refused) {
                continue;
            }
            Instant reset = Waits.rfc3339(headers.first("anthropic-ratelimit-" + dim + "-reset"));
            if (best.dimension() == null || (reset != null && (bestReset == null || reset.isAfter(bestReset)))) {
                best = new Found(limit != null && limit > 0 ? limit.doubleValue() : null, d);
                bestReset = reset;
            }
        }
        return best;
    }

    private static Double number(String digits) {
        if (digits == null) {
            return null;
        }
        String v = digits.replace(",", "");
        if (v.isEmpty() || v.length() > 15) {
            return null;
        }
        double n = Double.parseDouble(v);
        return n > 0 ? n : null;
    }
}
