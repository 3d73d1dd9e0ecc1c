package dev.layover.core.provider;

import static dev.layover.core.provider.FailureClass.AUTH_REFUSED;
import static dev.layover.core.provider.FailureClass.BAD_REQUEST;
import static dev.layover.core.provider.FailureClass.OVERLOADED;
import static dev.layover.core.provider.FailureClass.QUOTA_EXHAUSTED;
import static dev.layover.core.provider.FailureClass.RATE_LIMITED;
import static dev.layover.core.provider.FailureClass.TRANSIENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Error responses as the providers document them, each classified at the (status, headers, body)
 * level with a fixed clock. Every vector cites where its shape comes from.
 */
@PureTest
class DocumentedVectorsTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    /** One documented response and the verdict expected for it ({@code expected} null: no failure). */
    record Vector(String name, Provider provider, int status, Map<String, List<String>> headers, String body,
            FailureClass expected, Duration retryAfter, Instant resetAt) {
        @Override
        public String toString() {
            return name;
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void documentedResponseIsClassifiedAsDocumented(Vector v) {
        Optional<Classification> found = CLASSIFIER.classify(v.provider(), v.status(), v.headers(), v.body());
        if (v.expected() == null) {
            assertTrue(found.isEmpty(), () -> v.name() + ": " + found);
            return;
        }
        Classification c = found.orElseThrow(() -> new AssertionError(v.name() + ": no classification"));
        assertEquals(v.expected(), c.failureClass(), () -> v.name() + ": " + c);
        assertEquals(v.retryAfter(), c.retryAfter(), () -> v.name() + " retryAfter: " + c);
        assertEquals(v.resetAt(), c.resetAt(), () -> v.name() + " resetAt: " + c);
        assertEquals(v.provider() == null ? Provider.UNKNOWN : v.provider(), c.provider());
        assertEquals(v.status(), c.httpStatus());
        assertFalse(c.reason().isBlank(), v.name());
        assertTrue(c.reason().length() <= Classification.MAX_REASON_LENGTH, v.name());
    }

    static Stream<Vector> vectors() {
        List<Vector> all = new ArrayList<>();
        all.addAll(openAi());
        all.addAll(azure());
        all.addAll(anthropic());
        all.addAll(anthropicBedrock());
        all.addAll(gemini());
        all.addAll(bedrock());
        all.addAll(hostile());
        return all.stream();
    }

    // ---- OpenAI ----------------------------------------------------------------------------

    static List<Vector> openAi() {
        Provider p = Provider.OPENAI;
        return List.of(
                // https://platform.openai.com/docs/guides/error-codes (429 "You exceeded your current quota")
                v("openAiInsufficientQuota429IsQuotaNotRateLimit", p, 429, h(), """
                        {"error":{"message":"You exceeded your current quota, please check your plan and billing \
                        details. For more information on this error, read the docs: \
                        https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota",\
                        "param":null,"code":"insufficient_quota"}}""", QUOTA_EXHAUSTED, null, null),
                // insufficient_quota with a null code, as reported verbatim in
                // https://huggingface.co/spaces/microsoft/HuggingGPT/discussions/5
                v("openAiInsufficientQuotaTypeWithNullCodeIsQuota", p, 429, h(), """
                        {"error":{"message":"You exceeded your current quota, please check your plan and billing \
                        details.","type":"insufficient_quota","param":null,"code":null}}""",
                        QUOTA_EXHAUSTED, null, null),
                // billing code named in the OpenAI error-codes guide; type stays insufficient_quota
                v("openAiBillingHardLimitReachedIsQuota", p, 429, h(), """
                        {"error":{"message":"Billing hard limit has been reached","type":"insufficient_quota",\
                        "param":null,"code":"billing_hard_limit_reached"}}""", QUOTA_EXHAUSTED, null, null),
                // https://platform.openai.com/docs/guides/error-codes : credit_balance_exhausted
                v("openAiCreditBalanceExhaustedIsQuota", p, 429, h(), """
                        {"error":{"message":"You exceeded your current quota, please check your plan and billing \
                        details.","type":"insufficient_quota","param":null,"code":"credit_balance_exhausted"}}""",
                        QUOTA_EXHAUSTED, null, null),
                // https://developers.openai.com/api/docs/guides/spend-limits : hard spend limit -> 429 code
                v("openAiProjectSpendLimitExceededIsQuota", p, 429, h(), """
                        {"error":{"message":"You exceeded your current quota, please check your plan and billing \
                        details.","type":"insufficient_quota","param":null,"code":"project_spend_limit_exceeded"}}""",
                        QUOTA_EXHAUSTED, null, null),
                // same guide: organization_spend_limit_exceeded
                v("openAiOrganizationSpendLimitExceededIsQuota", p, 429, h(), """
                        {"error":{"message":"Your organization has reached its monthly spend limit.",\
                        "type":"insufficient_quota","param":null,"code":"organization_spend_limit_exceeded"}}""",
                        QUOTA_EXHAUSTED, null, null),
                // https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers ; the token
                // limit is the exhausted one, so its reset is the wait
                v("openAiTpmRateLimitWaitsForTheExhaustedTokenReset", p, 429,
                        h("x-ratelimit-limit-requests", "500", "x-ratelimit-remaining-requests", "499",
                                "x-ratelimit-reset-requests", "120ms", "x-ratelimit-limit-tokens", "30000",
                                "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1.4s"), """
                        {"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min \
                        (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s. Visit \
                        https://platform.openai.com/account/rate-limits to learn more.","type":"tokens",\
                        "param":null,"code":"rate_limit_exceeded"}}""", RATE_LIMITED, Duration.ofMillis(1400), null),
                // the rate-limits guide's header example (reset-requests 1s, reset-tokens 6m0s), neither
                // exhausted: the larger reset is the wait
                v("openAiDocExampleHeadersTakeTheLargerReset", p, 429,
                        h("x-ratelimit-limit-requests", "60", "x-ratelimit-limit-tokens", "150000",
                                "x-ratelimit-remaining-requests", "59", "x-ratelimit-remaining-tokens", "149984",
                                "x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-tokens", "6m0s"), """
                        {"error":{"message":"Rate limit reached for requests","type":"requests","param":null,\
                        "code":"rate_limit_exceeded"}}""", RATE_LIMITED, Duration.ofMinutes(6), null),
                // rate-limits guide: requests exhausted, so its 6m0s reset wins over the tokens' 1s
                v("openAiExhaustedRequestsResetWinsOverLargerTokens", p, 429,
                        h("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1h2m3.5s",
                                "x-ratelimit-remaining-tokens", "12", "x-ratelimit-reset-tokens", "2h"), """
                        {"error":{"message":"Rate limit reached for requests","type":"requests","param":null,\
                        "code":"rate_limit_exceeded"}}""", RATE_LIMITED, Duration.ofMillis(3_723_500), null),
                // RFC 9110 retry-after beats the x-ratelimit headers (rate-limits guide lists both)
                v("openAiRetryAfterHeaderBeatsResetHeaders", p, 429,
                        h("retry-after", "20", "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"),
                        """
                        {"error":{"message":"Rate limit reached for requests","type":"requests","param":null,\
                        "code":"rate_limit_exceeded"}}""", RATE_LIMITED, Duration.ofSeconds(20), null),
                // openai-java RetryingHttpClient reads Retry-After-Ms before Retry-After
                v("openAiRetryAfterMsBeatsRetryAfter", p, 429, h("retry-after-ms", "1500", "retry-after", "2"), """
                        {"error":{"message":"Rate limit reached for requests","type":"requests","param":null,\
                        "code":"rate_limit_exceeded"}}""", RATE_LIMITED, Duration.ofMillis(1500), null),
                // https://community.openai.com/t/daily-request-limit-erroneously-exceeded/1201052 (RPD)
                v("openAiRequestsPerDayLimitIsQuotaResettingAfterTheHint", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on requests \
                        per day (RPD): Limit 10000, Used 10000, Requested 1. Please try again in 8.64s. Visit \
                        https://platform.openai.com/account/rate-limits to learn more.","type":"requests",\
                        "param":null,"code":"rate_limit_exceeded"}}""", QUOTA_EXHAUSTED, Duration.ofMillis(8640),
                        NOW.plusMillis(8640)),
                // https://platform.openai.com/docs/guides/rate-limits (TPD limits) - same message shape
                v("openAiTokensPerDayLimitIsQuota", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-3.5-turbo in organization org-abc on tokens \
                        per day (TPD): Limit 200000, Used 199950, Requested 3000. Please try again in 1h2m3.5s.",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}""", QUOTA_EXHAUSTED,
                        Duration.ofMillis(3_723_500), NOW.plusMillis(3_723_500)),
                // https://platform.openai.com/docs/guides/rate-limits : a request above the TPM limit
                v("openAiRequestLargerThanTpmLimitCanNeverPass", p, 429, h(), """
                        {"error":{"message":"Request too large for gpt-4o in organization org-abc on tokens per min \
                        (TPM): Limit 30000, Requested 52344. The input or output tokens must be reduced in order to \
                        run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}""", BAD_REQUEST, null, null),
                // https://community.openai.com/t/error-code-429-rate-limit-differs-from-documentation/1066011
                v("openAiLongTryAgainHintIsRead", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on tokens per \
                        min (TPM): Limit 100000, Used 99918, Requested 2094. Please try again in 14h29m11.04s. Visit \
                        https://platform.openai.com/account/rate-limits to learn more.","type":"tokens",\
                        "param":null,"code":"rate_limit_exceeded"}}""", RATE_LIMITED,
                        Duration.ofHours(14).plusMinutes(29).plusMillis(11_040), null),
                // https://platform.openai.com/docs/guides/error-codes (401 Incorrect API key provided)
                v("openAiInvalidApiKeyIsAuthRefused", p, 401, h(), """
                        {"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at \
                        https://platform.openai.com/account/api-keys.","type":"invalid_request_error",\
                        "param":null,"code":"invalid_api_key"}}""", AUTH_REFUSED, null, null),
                // https://platform.openai.com/docs/guides/error-codes (403 Country, region, or territory)
                v("openAiUnsupportedRegion403IsAuthRefused", p, 403, h(), """
                        {"error":{"code":"unsupported_country_region_territory","message":"Country, region, or \
                        territory not supported","param":null,"type":"request_forbidden"}}""",
                        AUTH_REFUSED, null, null),
                // https://platform.openai.com/docs/guides/error-codes (500 The server had an error)
                v("openAiServerError500IsTransient", p, 500, h(), """
                        {"error":{"message":"The server had an error while processing your request. Sorry about \
                        that!","type":"server_error","param":null,"code":null}}""", TRANSIENT, null, null),
                // https://platform.openai.com/docs/guides/error-codes (503 The engine is currently overloaded)
                v("openAiEngineOverloaded503IsOverloaded", p, 503, h(), """
                        {"error":{"message":"The engine is currently overloaded, please try again later",\
                        "type":"server_error","param":null,"code":null}}""", OVERLOADED, null, null),
                // https://platform.openai.com/docs/guides/error-codes (400 context length)
                v("openAiContextLengthExceededIsBadRequest", p, 400, h(), """
                        {"error":{"message":"This model's maximum context length is 128000 tokens. However, your \
                        messages resulted in 130000 tokens. Please reduce the length of the messages.",\
                        "type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}""",
                        BAD_REQUEST, null, null),
                // https://platform.openai.com/docs/api-reference/chat/streaming ; openai-java SseHandler.kt
                // throws on a chunk carrying "error" inside a 200 stream
                v("openAiStreamChunkErrorInside200IsClassifiedByBody", p, 200, h("content-type", "text/event-stream"),
                        """
                        data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}

                        data: {"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 30000, Requested 900. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}

                        """, RATE_LIMITED, Duration.ofSeconds(2), null),
                // same stream shape with a server_error chunk
                v("openAiStreamServerErrorChunkIsTransient", p, 200, h("content-type", "text/event-stream"), """
                        data: {"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}

                        """, TRANSIENT, null, null),
                // https://platform.openai.com/docs/guides/error-codes (404 model does not exist)
                v("openAiModelNotFoundIsBadRequest", p, 404, h(), """
                        {"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.",\
                        "type":"invalid_request_error","param":null,"code":"model_not_found"}}""",
                        BAD_REQUEST, null, null));
    }

    // ---- Azure OpenAI ----------------------------------------------------------------------

    static List<Vector> azure() {
        Provider p = Provider.AZURE_OPENAI;
        return List.of(
                // https://learn.microsoft.com/azure/ai-services/openai/quotas-limits (429 with retry-after)
                v("azureTokenRateLimit429UsesRetryAfterMs", p, 429,
                        h("retry-after-ms", "6000", "retry-after", "6", "x-ratelimit-remaining-tokens", "0",
                                "apim-request-id", "8f0c6b2e-1"), """
                        {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under \
                        Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 \
                        pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease \
                        if you would like to further increase the default rate limit."}}""",
                        RATE_LIMITED, Duration.ofSeconds(6), null),
                // same documented message without headers: the "retry after 59 seconds" hint is read
                v("azureRetryAfterSecondsHintInMessageIsRead", p, 429, h(), """
                        {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under \
                        Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 \
                        pricing tier. Please retry after 59 seconds."}}""", RATE_LIMITED, Duration.ofSeconds(59), null),
                // https://learn.microsoft.com/en-us/answers/questions/5625878 : remaining -1, reset 0 means
                // "no limit to report", not "retry now"
                v("azureMinusOneRemainingHeadersAreIgnored", p, 429,
                        h("x-ratelimit-limit-tokens", "-1", "x-ratelimit-remaining-tokens", "-1",
                                "x-ratelimit-reset-tokens", "0"),
                        """
                        {"error":{"code":"429","message":"Requests to the Responses_Create Operation have exceeded \
                        token rate limit."}}""", RATE_LIMITED, null, null),
                // https://learn.microsoft.com/azure/ai-services/openai/concepts/content-filter (400 content_filter)
                v("azureContentFilterIsBadRequest", p, 400, h(), """
                        {"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's \
                        content management policy.","type":null,"param":"prompt","code":"content_filter",\
                        "status":400}}""", BAD_REQUEST, null, null),
                // https://learn.microsoft.com/azure/ai-services/openai/reference (401 invalid subscription key)
                v("azureInvalidSubscriptionKeyIsAuthRefused", p, 401, h(), """
                        {"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API \
                        endpoint. Make sure to provide a valid key for an active subscription and use a correct \
                        regional API endpoint for your resource."}}""", AUTH_REFUSED, null, null),
                // https://learn.microsoft.com/azure/ai-services/openai/reference (500 InternalServerError)
                v("azureInternalServerErrorIsTransient", p, 500, h(), """
                        {"error":{"code":"InternalServerError","message":"The service is temporarily unable to \
                        process your request. Please try again later."}}""", TRANSIENT, null, null),
                // Azure OpenAI 408 request timeout (same reference)
                v("azureTimeout408IsTransient", p, 408, h(), """
                        {"error":{"code":"Timeout","message":"The operation was timeout."}}""", TRANSIENT, null, null));
    }

    // ---- Anthropic -------------------------------------------------------------------------

    static List<Vector> anthropic() {
        Provider p = Provider.ANTHROPIC;
        return List.of(
                // https://docs.anthropic.com/en/api/rate-limits (429 with retry-after)
                v("anthropicRateLimitErrorUsesRetryAfter", p, 429,
                        h("retry-after", "20", "anthropic-ratelimit-requests-limit", "50",
                                "anthropic-ratelimit-requests-remaining", "0",
                                "anthropic-ratelimit-requests-reset", "2026-05-28T10:16:30Z"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has \
                        exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the \
                        response headers for current usage."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}""",
                        RATE_LIMITED, Duration.ofSeconds(20), null),
                // https://docs.anthropic.com/en/api/rate-limits#response-headers : only the exhausted
                // limit's reset counts
                v("anthropicResetOfTheExhaustedLimitIsTheWait", p, 429,
                        h("anthropic-ratelimit-requests-remaining", "48",
                                "anthropic-ratelimit-requests-reset", "2026-05-28T10:15:31Z",
                                "anthropic-ratelimit-input-tokens-remaining", "0",
                                "anthropic-ratelimit-input-tokens-reset", "2026-05-28T10:16:00Z",
                                "anthropic-ratelimit-output-tokens-remaining", "7000",
                                "anthropic-ratelimit-output-tokens-reset", "2026-05-28T10:17:00Z"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the \
                        rate limit for your organization of 40,000 input tokens per minute."}}""",
                        RATE_LIMITED, Duration.ofSeconds(30), null),
                // same page: with two limits exhausted the later reset is the wait
                v("anthropicLatestResetAmongExhaustedLimitsWins", p, 429,
                        h("anthropic-ratelimit-tokens-remaining", "0",
                                "anthropic-ratelimit-tokens-reset", "2026-05-28T10:15:45.500Z",
                                "anthropic-ratelimit-output-tokens-remaining", "0",
                                "anthropic-ratelimit-output-tokens-reset", "2026-05-28T10:16:10Z"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the \
                        rate limit for your organization of 8,000 output tokens per minute."}}""",
                        RATE_LIMITED, Duration.ofSeconds(40), null),
                // https://docs.anthropic.com/en/api/errors (429 rate_limit_error with error.details.error_code
                // enforced_spend_limit_reached: paused until 00:00 UTC on the 1st of next month);
                // anthropic-java models/EnforcedSpendLimitReachedErrorDetails.kt
                v("anthropicEnforcedSpendLimit429IsQuotaUntilNextMonth", p, 429, h(), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"Your organization has reached \
                        the monthly spend limit of its usage tier.","details":{"error_code":\
                        "enforced_spend_limit_reached"}},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}""",
                        QUOTA_EXHAUSTED, null, Instant.parse("2026-06-01T00:00:00Z")),
                // https://docs.anthropic.com/en/api/errors ; message verbatim in
                // https://github.com/anthropics/claude-code-action/issues/1224
                v("anthropicCreditBalanceTooLow400IsQuota", p, 400, h(), """
                        {"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too \
                        low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase \
                        credits."}}""", QUOTA_EXHAUSTED, null, null),
                // verbatim in https://github.com/anthropics/claude-code/issues/55998
                v("anthropicWorkspaceUsageLimit400IsQuotaUntilRegainDate", p, 400, h(), """
                        {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your \
                        specified workspace API usage limits. You will regain access on 2026-06-01 at 00:00 UTC."},\
                        "request_id":"req_011CahTT19rCWDmWQPwbYb7s"}""",
                        QUOTA_EXHAUSTED, null, Instant.parse("2026-06-01T00:00:00Z")),
                // https://docs.anthropic.com/en/api/errors (organization-level API usage limit, same sentence)
                v("anthropicApiUsageLimitWithTimeOfDayIsQuota", p, 400, h(), """
                        {"type":"error","error":{"type":"invalid_request_error","message":"You have reached your \
                        specified API usage limits. You will regain access on 2026-05-30 at 18:30 UTC."}}""",
                        QUOTA_EXHAUSTED, null, Instant.parse("2026-05-30T18:30:00Z")),
                // https://docs.anthropic.com/en/api/errors (529 overloaded_error)
                v("anthropicOverloaded529IsOverloaded", p, 529, h(), """
                        {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},\
                        "request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}""", OVERLOADED, null, null),
                // https://learn.microsoft.com/microsoft-cloud/dev/dev-proxy/concepts/anthropic-529-overloaded-error
                // ("use retry-after if it is there")
                v("anthropicOverloadedKeepsItsRetryAfterAsFloor", p, 529, h("retry-after", "3"), """
                        {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}""",
                        OVERLOADED, Duration.ofSeconds(3), null),
                // https://docs.anthropic.com/en/api/errors (401 authentication_error)
                v("anthropicAuthenticationErrorIsAuthRefused", p, 401, h(), """
                        {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}""",
                        AUTH_REFUSED, null, null),
                // https://docs.anthropic.com/en/api/errors (403 permission_error)
                v("anthropicPermissionErrorIsAuthRefused", p, 403, h(), """
                        {"type":"error","error":{"type":"permission_error","message":"Your API key does not have \
                        permission to use the specified resource."}}""", AUTH_REFUSED, null, null),
                // https://docs.anthropic.com/en/api/errors (500 api_error)
                v("anthropicApiError500IsTransient", p, 500, h(), """
                        {"type":"error","error":{"type":"api_error","message":"Internal server error"}}""",
                        TRANSIENT, null, null),
                // anthropic-java models/GatewayTimeoutError.kt (504 timeout_error)
                v("anthropicTimeoutError504IsTransient", p, 504, h(), """
                        {"type":"error","error":{"type":"timeout_error","message":"Request timed out"}}""",
                        TRANSIENT, null, null),
                // https://docs.anthropic.com/en/api/errors (413 request_too_large)
                v("anthropicRequestTooLarge413IsBadRequest", p, 413, h(), """
                        {"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum \
                        allowed number of bytes."}}""", BAD_REQUEST, null, null),
                // https://docs.anthropic.com/en/api/errors (402 billing_error)
                v("anthropicBillingError402IsQuota", p, 402, h(), """
                        {"type":"error","error":{"type":"billing_error","message":"There is an issue with your \
                        account's billing."}}""", QUOTA_EXHAUSTED, null, null),
                // https://docs.anthropic.com/en/api/errors (404 not_found_error)
                v("anthropicNotFoundErrorIsBadRequest", p, 404, h(), """
                        {"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}""",
                        BAD_REQUEST, null, null),
                // https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events
                v("anthropicOverloadedErrorEventInside200StreamIsOverloaded", p, 200,
                        h("content-type", "text/event-stream"), """
                        event: message_start
                        data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}

                        event: ping
                        data: {"type": "ping"}

                        event: error
                        data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

                        """, OVERLOADED, null, null),
                // anthropic-java models/RampLimitExceededErrorDetails.kt ("retry after the retry-after header")
                v("anthropicRampLimitIsRateLimitedWithRetryAfter", p, 429, h("retry-after", "30"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"Your usage is growing too \
                        fast.","details":{"error_code":"ramp_limit_exceeded"}}}""",
                        RATE_LIMITED, Duration.ofSeconds(30), null));
    }

    // ---- Anthropic on Bedrock --------------------------------------------------------------

    static List<Vector> anthropicBedrock() {
        Provider p = Provider.ANTHROPIC_BEDROCK;
        String amzn = "x-amzn-ErrorType";
        return List.of(
                // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html#API_runtime_InvokeModel_Errors
                // (ThrottlingException 429); message as in https://github.com/anthropics/claude-code/issues/77
                v("anthropicOnBedrockThrottlingIsRateLimited", p, 429,
                        h(amzn, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"), """
                        {"message":"Too many tokens, please wait before trying again."}""", RATE_LIMITED, null, null),
                // verbatim in https://github.com/Ivy-Interactive/Ivy-Tendril/issues/1756
                v("anthropicOnBedrockTokensPerDayIsQuota", p, 429, h(amzn, "ThrottlingException"), """
                        {"message":"Too many tokens per day, please wait before trying again."}""",
                        QUOTA_EXHAUSTED, null, null),
                // InvokeModel errors: ValidationException 400
                v("anthropicOnBedrockValidationIsBadRequest", p, 400, h(amzn, "ValidationException"), """
                        {"message":"messages: roles must alternate between \\"user\\" and \\"assistant\\""}""",
                        BAD_REQUEST, null, null),
                // InvokeModel errors: AccessDeniedException 403 (message from
                // https://repost.aws/knowledge-center/bedrock-invokemodel-api-error)
                v("anthropicOnBedrockAccessDeniedIsAuthRefused", p, 403, h(amzn, "AccessDeniedException"), """
                        {"message":"You don't have access to the model with the specified model ID."}""",
                        AUTH_REFUSED, null, null),
                // anthropic-java-bedrock BedrockBackend.kt turns an event-stream exception into an SSE
                // error event whose type is the :exception-type header
                v("anthropicOnBedrockStreamThrottlingEventIsRateLimited", p, 200,
                        h("content-type", "text/event-stream"), """
                        event: error
                        data: {"type":"error","error":{"type":"throttlingException","message":"Too many tokens, please wait before trying again."}}

                        """, RATE_LIMITED, null, null),
                // InvokeModel errors: ServiceUnavailableException 503
                v("anthropicOnBedrockServiceUnavailableIsOverloaded", p, 503,
                        h(amzn, "ServiceUnavailableException"), """
                        {"message":"Bedrock is unable to process your request."}""", OVERLOADED, null, null),
                // InvokeModel errors: ModelTimeoutException 408
                v("anthropicOnBedrockModelTimeoutIsTransient", p, 408, h(amzn, "ModelTimeoutException"), """
                        {"message":"Model has timed out in processing the request. Try your request again."}""",
                        TRANSIENT, null, null));
    }

    // ---- Gemini (Google AI and Vertex) -----------------------------------------------------

    static List<Vector> gemini() {
        Provider p = Provider.GEMINI;
        Instant pacificMidnight = Instant.parse("2026-05-29T07:00:00Z");
        return List.of(
                // https://ai.google.dev/gemini-api/docs/rate-limits (RPD resets at midnight Pacific);
                // body as returned by generativelanguage.googleapis.com, see
                // https://ai.google.dev/gemini-api/docs/troubleshooting (429 RESOURCE_EXHAUSTED)
                v("geminiPerDayQuotaIdIsQuotaUntilPacificMidnight", p, 429, h(), """
                        {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                        billing details. For more information on this error, head to: \
                        https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED",\
                        "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[\
                        {"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests",\
                        "quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":\
                        {"location":"global","model":"gemini-2.5-flash"},"quotaValue":"250"}]},\
                        {"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about \
                        Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},\
                        {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"22s"}]}}""",
                        QUOTA_EXHAUSTED, Duration.ofSeconds(22), pacificMidnight),
                // same docs, per-minute quota id: a plain rate limit, RetryInfo is the wait
                v("geminiPerMinuteQuotaIsRateLimitedWithRetryDelay", p, 429, h(), """
                        {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                        billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":\
                        "type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                        "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count","quotaId":\
                        "GenerateContentPaidTierInputTokensPerModelPerMinute"}]},{"@type":\
                        "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"12s"}]}}""",
                        RATE_LIMITED, Duration.ofSeconds(12), null),
                // mixed per-day and per-minute violations (free tier, limit 0) as returned by the API; the
                // day quota decides
                v("geminiMixedViolationsWithAPerDayIdIsQuota", p, 429, h(), """
                        {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                        billing details. * Quota exceeded for metric: \
                        generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: \
                        gemini-2.0-flash Please retry in 10.689924287s.","status":"RESOURCE_EXHAUSTED","details":[\
                        {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                        "generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":\
                        "GenerateRequestsPerDayPerProjectPerModel-FreeTier"},{"quotaMetric":\
                        "generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":\
                        "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":\
                        "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"10s"}]}}""",
                        QUOTA_EXHAUSTED, Duration.ofSeconds(10), pacificMidnight),
                // RetryInfo with a fractional delay (google.protobuf.Duration JSON, e.g. "0.5s")
                v("geminiFractionalRetryDelayIsRead", p, 429, h(), """
                        {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).",\
                        "status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo",\
                        "retryDelay":"0.5s"}]}}""", RATE_LIMITED, Duration.ofMillis(500), null),
                // https://ai.google.dev/gemini-api/docs/billing#prepay : depleted prepayment; message
                // verbatim in https://discuss.ai.google.dev/t/.../170539
                v("geminiDepletedPrepaymentIsQuota", p, 429, h(), """
                        {"error":{"code":429,"message":"Your prepayment credits are depleted. Please go to AI Studio \
                        at https://ai.studio/projects to manage your project and billing.","status":\
                        "RESOURCE_EXHAUSTED"}}""", QUOTA_EXHAUSTED, null, null),
                // https://ai.google.dev/gemini-api/docs/troubleshooting (400 API key not valid, ErrorInfo)
                v("geminiApiKeyInvalid400IsAuthRefused", p, 400, h(), """
                        {"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":\
                        "INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":\
                        "API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":\
                        "generativelanguage.googleapis.com"}}]}}""", AUTH_REFUSED, null, null),
                // troubleshooting guide: 400 INVALID_ARGUMENT
                v("geminiInvalidArgumentIsBadRequest", p, 400, h(), """
                        {"error":{"code":400,"message":"Request contains an invalid argument.","status":\
                        "INVALID_ARGUMENT"}}""", BAD_REQUEST, null, null),
                // troubleshooting guide: 400 FAILED_PRECONDITION (region)
                v("geminiFailedPreconditionIsBadRequest", p, 400, h(), """
                        {"error":{"code":400,"message":"User location is not supported for the API use.","status":\
                        "FAILED_PRECONDITION"}}""", BAD_REQUEST, null, null),
                // troubleshooting guide: 403 PERMISSION_DENIED
                v("geminiPermissionDeniedIsAuthRefused", p, 403, h(), """
                        {"error":{"code":403,"message":"Method doesn't allow unregistered callers (callers without \
                        established identity). Please use API Key or other form of API consumer identity to call \
                        this API.","status":"PERMISSION_DENIED"}}""", AUTH_REFUSED, null, null),
                // troubleshooting guide: 500 INTERNAL
                v("geminiInternal500IsTransient", p, 500, h(), """
                        {"error":{"code":500,"message":"An internal error has occurred. Please retry or report in \
                        https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}""",
                        TRANSIENT, null, null),
                // troubleshooting guide: 503 UNAVAILABLE
                v("geminiUnavailable503IsOverloaded", p, 503, h(), """
                        {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":\
                        "UNAVAILABLE"}}""", OVERLOADED, null, null),
                // troubleshooting guide: 504 DEADLINE_EXCEEDED
                v("geminiDeadlineExceeded504IsTransient", p, 504, h(), """
                        {"error":{"code":504,"message":"Deadline expired before operation could complete.",\
                        "status":"DEADLINE_EXCEEDED"}}""", TRANSIENT, null, null),
                // https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 (Vertex 429)
                v("vertexResourceExhaustedIsRateLimited", p, 429, h(), """
                        {"error":{"code":429,"message":"Resource exhausted. Please try again later. Please refer to \
                        https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.",\
                        "status":"RESOURCE_EXHAUSTED"}}""", RATE_LIMITED, null, null),
                // streamGenerateContent?alt=sse: an error chunk inside a 200 stream (google-genai
                // ResponseStream raises it from the chunk's "error")
                v("geminiErrorChunkInside200SseIsClassifiedByItsCode", p, 200,
                        h("content-type", "text/event-stream"), """
                        data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}

                        data: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}

                        """, RATE_LIMITED, null, null),
                // streamGenerateContent without alt=sse answers with a JSON array of chunks
                v("geminiErrorInsideJsonArrayStreamIsRead", p, 200, h("content-type", "application/json"), """
                        [{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]},\
                        {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]""",
                        OVERLOADED, null, null));
    }

    // ---- Bedrock ---------------------------------------------------------------------------

    static List<Vector> bedrock() {
        Provider p = Provider.BEDROCK;
        String amzn = "x-amzn-ErrorType";
        // Errors of https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html
        // and https://docs.aws.amazon.com/bedrock/latest/userguide/troubleshooting-api-error-codes.html
        return List.of(
                v("bedrockThrottlingExceptionIsRateLimited", p, 429, h(amzn, "ThrottlingException"), """
                        {"message":"Too many requests, please wait before trying again."}""", RATE_LIMITED, null, null),
                v("bedrockServiceQuotaExceeded400IsQuota", p, 400, h(amzn, "ServiceQuotaExceededException"), """
                        {"message":"Your request exceeds the service quota for your account. You can view your \
                        service quotas at https://docs.aws.amazon.com/servicequotas/latest/userguide/\
                        gs-request-quota.html. You can resubmit your request later."}""", QUOTA_EXHAUSTED, null, null),
                v("bedrockModelNotReady429IsOverloaded", p, 429, h(amzn, "ModelNotReadyException"), """
                        {"message":"Model is not ready to serve inference requests. The AWS SDK will automatically \
                        retry the operation up to 5 times."}""", OVERLOADED, null, null),
                v("bedrockServiceUnavailable503IsOverloaded", p, 503, h(amzn, "ServiceUnavailableException"), """
                        {"message":"Bedrock is unable to process your request."}""", OVERLOADED, null, null),
                v("bedrockInternalServerExceptionIsTransient", p, 500, h(amzn, "InternalServerException"), """
                        {"message":"An internal server error occurred. Retry your request."}""", TRANSIENT, null, null),
                v("bedrockModelTimeoutIsTransient", p, 408, h(amzn, "ModelTimeoutException"), """
                        {"message":"The request took too long to process. Processing time exceeded the model \
                        timeout length."}""", TRANSIENT, null, null),
                v("bedrockModelErrorIsTransient", p, 424, h(amzn, "ModelErrorException"), """
                        {"message":"The request failed due to an error while processing the model."}""",
                        TRANSIENT, null, null),
                v("bedrockAccessDeniedIsAuthRefused", p, 403, h(amzn, "AccessDeniedException"), """
                        {"message":"You don't have access to the model with the specified model ID."}""",
                        AUTH_REFUSED, null, null),
                // https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html
                v("bedrockUnrecognizedClientIsAuthRefused", p, 403, h(amzn, "UnrecognizedClientException"), """
                        {"message":"The security token included in the request is invalid."}""",
                        AUTH_REFUSED, null, null),
                v("bedrockValidationExceptionIsBadRequest", p, 400, h(amzn, "ValidationException"), """
                        {"message":"Malformed input request: #: extraneous key [foo] is not permitted, please \
                        reformat your input and try again."}""", BAD_REQUEST, null, null),
                v("bedrockResourceNotFoundIsBadRequest", p, 404, h(amzn, "ResourceNotFoundException"), """
                        {"message":"Model not found."}""", BAD_REQUEST, null, null),
                // Bedrock throttling "per day" (https://github.com/Ivy-Interactive/Ivy-Tendril/issues/1756)
                v("bedrockThrottlingPerDayIsQuota", p, 429, h(amzn, "ThrottlingException"), """
                        {"message":"Too many tokens per day, please wait before trying again."}""",
                        QUOTA_EXHAUSTED, null, null),
                // AWS JSON protocol: the error type may come as "__type" in the body instead of a header
                // (https://smithy.io/2.0/aws/protocols/aws-restjson1-protocol.html#operation-error-serialization)
                v("bedrockTypeInBodyUnderscoreTypeIsRead", p, 400, h(), """
                        {"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate exceeded"}""",
                        RATE_LIMITED, null, null),
                // ThrottlingException with a Retry-After (honoured by AWS SDK v2 RetryableStage)
                v("bedrockThrottlingRetryAfterSecondsIsRead", p, 429,
                        h(amzn, "ThrottlingException", "Retry-After", "7"), """
                        {"message":"Too many requests, please wait before trying again."}""",
                        RATE_LIMITED, Duration.ofSeconds(7), null));
    }

    // ---- hostile input ---------------------------------------------------------------------

    static List<Vector> hostile() {
        Provider u = Provider.UNKNOWN;
        String rl = """
                {"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}""";
        List<Vector> list = new ArrayList<>(List.of(
                // RFC 9110 section 10.2.3: delay-seconds or HTTP-date; anything else is ignored
                v("retryAfterSoonIsIgnored", u, 429, h("retry-after", "soon"), rl, RATE_LIMITED, null, null),
                v("negativeRetryAfterIsIgnored", u, 429, h("retry-after", "-5"), rl, RATE_LIMITED, null, null),
                v("absurdRetryAfterIsClampedToMaxWait", u, 429, h("retry-after", "99999999999"), rl,
                        RATE_LIMITED, ProviderClassifier.DEFAULT_MAX_WAIT, null),
                v("twoRetryAfterValuesTakeTheLonger", u, 429, h("retry-after", "3", "retry-after", "8"), rl,
                        RATE_LIMITED, Duration.ofSeconds(8), null),
                v("commaSeparatedRetryAfterTakesTheLonger", u, 429, h("retry-after", "5, 10"), rl,
                        RATE_LIMITED, Duration.ofSeconds(10), null),
                v("emptyRetryAfterIsIgnored", u, 429, h("retry-after", ""), rl, RATE_LIMITED, null, null),
                v("nanAndHexRetryAfterAreIgnored", u, 429, h("retry-after", "NaN", "retry-after-ms", "0x10"), rl,
                        RATE_LIMITED, null, null),
                v("infinityRetryAfterIsIgnored", u, 429, h("retry-after", "Infinity"), rl, RATE_LIMITED, null, null),
                v("fractionalRetryAfterSecondsIsRead", u, 429, h("Retry-After", "1.5"), rl,
                        RATE_LIMITED, Duration.ofMillis(1500), null),
                // RFC 9110 HTTP-date, converted with the injected clock
                v("httpDateRetryAfterIsAWaitFromNow", u, 503, h("retry-after", "Thu, 28 May 2026 10:16:00 GMT"), null,
                        OVERLOADED, Duration.ofSeconds(30), null),
                v("httpDateInThePastIsAZeroWait", u, 429, h("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"), rl,
                        RATE_LIMITED, Duration.ZERO, null),
                v("garbledRetryAfterMsFallsBackToRetryAfter", u, 429, h("retry-after-ms", "abc", "retry-after", "2"),
                        rl, RATE_LIMITED, Duration.ofSeconds(2), null),
                v("garbledResetHeaderIsIgnored", u, 429, h("x-ratelimit-reset-tokens", "whenever"), rl,
                        RATE_LIMITED, null, null),
                v("nonRfc3339AnthropicResetIsIgnored", u, 429,
                        h("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", "tomorrow"),
                        rl, RATE_LIMITED, null, null),
                v("headerNamesAreCaseInsensitive", u, 429, h("RETRY-AFTER", "4"), rl,
                        RATE_LIMITED, Duration.ofSeconds(4), null),
                v("htmlBadGatewayFromProxyIsTransient", u, 502, h("content-type", "text/html"), """
                        <html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>\
                        </center><hr><center>cloudflare</center></body></html>""", TRANSIENT, null, null),
                v("htmlTooManyRequestsFromProxyIsRateLimited", u, 429, h("content-type", "text/html"), """
                        <html><body><h1>429 Too Many Requests</h1>You have sent too many requests.</body></html>""",
                        RATE_LIMITED, null, null),
                v("nullBody503IsOverloaded", u, 503, h(), null, OVERLOADED, null, null),
                v("emptyBody529IsOverloaded", u, 529, h(), "", OVERLOADED, null, null),
                v("nullHeaders401IsAuthRefused", u, 401, null, "{}", AUTH_REFUSED, null, null),
                v("plainTextBody403IsAuthRefused", u, 403, h(), "Forbidden", AUTH_REFUSED, null, null),
                v("truncatedJson429IsRateLimited", u, 429, h(), "{\"error\": {\"type\": \"rate_lim", RATE_LIMITED,
                        null, null),
                v("stringErrorMemberIsRead", u, 429, h(), "{\"error\": \"Too Many Requests\"}", RATE_LIMITED,
                        null, null),
                v("jsonNullBody500IsTransient", u, 500, h(), "null", TRANSIENT, null, null),
                v("status425IsTransient", u, 425, h(), null, TRANSIENT, null, null),
                v("status409IsTransient", u, 409, h(), null, TRANSIENT, null, null),
                v("status418IsBadRequest", u, 418, h(), "I'm a teapot", BAD_REQUEST, null, null),
                v("status200WithoutErrorIsNoFailure", u, 200, h(), "{\"id\":\"chatcmpl-1\",\"choices\":[]}",
                        null, null, null),
                v("status200WithABareMessageIsNoFailure", u, 200, h(), "{\"message\":\"hello\"}", null, null, null),
                v("status302IsTransient", u, 302, h("location", "https://example.com/"), null, TRANSIENT, null, null),
                v("status0IsTransient", u, 0, h(), null, TRANSIENT, null, null),
                v("negativeStatusIsTransient", u, -1, h(), null, TRANSIENT, null, null),
                v("status999IsTransient", u, 999, h(), null, TRANSIENT, null, null),
                v("nullProviderIsUnknown", null, 429, h(), rl, RATE_LIMITED, null, null)));
        list.add(v("deeplyNestedJsonDoesNotThrow", u, 400, h(), "[".repeat(5000) + "]".repeat(5000),
                BAD_REQUEST, null, null));
        list.add(v("hugeMessageIsCut", u, 400, h(),
                "{\"error\":{\"type\":\"invalid_request_error\",\"message\":\"" + "x".repeat(20_000) + "\"}}",
                BAD_REQUEST, null, null));
        list.add(v("controlCharactersAroundRetryAfterAreTrimmed", u, 429, h("retry-after", "\u0000\n12\t"), rl,
                RATE_LIMITED, Duration.ofSeconds(12), null));
        list.add(v("controlCharacterInsideRetryAfterIsIgnored", u, 429, h("retry-after", "1\u00002"), rl,
                RATE_LIMITED, null, null));
        return list;
    }

    // ---- helpers ---------------------------------------------------------------------------

    static Vector v(String name, Provider provider, int status, Map<String, List<String>> headers, String body,
            FailureClass expected, Duration retryAfter, Instant resetAt) {
        return new Vector(name, provider, status, headers, body, expected, retryAfter, resetAt);
    }

    /** Headers from name/value pairs; a name given twice gets two values. */
    static Map<String, List<String>> h(String... pairs) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            m.computeIfAbsent(pairs[i], k -> new ArrayList<>()).add(pairs[i + 1]);
        }
        return m;
    }
}
