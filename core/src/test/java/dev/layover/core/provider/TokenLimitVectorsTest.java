package dev.layover.core.provider;

import static dev.layover.core.provider.DocumentedVectorsTest.h;
import static dev.layover.core.provider.FailureClass.BAD_REQUEST;
import static dev.layover.core.provider.FailureClass.QUOTA_EXHAUSTED;
import static dev.layover.core.provider.FailureClass.RATE_LIMITED;
import static dev.layover.core.provider.TokenDimension.INPUT_TOKENS;
import static dev.layover.core.provider.TokenDimension.OUTPUT_TOKENS;
import static dev.layover.core.provider.TokenDimension.TOKENS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The limit a 429 states, in each provider's documented shape: which token limit refused and its
 * size per minute ({@link Classification#tokenLimitPerMinute()}, {@link Classification#tokenDimension()}),
 * or the request limit ({@link Classification#requestLimitPerSecond()}), and a request larger than
 * a token limit can ever admit. Every vector cites where its shape comes from.
 */
@PureTest
class TokenLimitVectorsTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build();

    /** One documented 429 and the limit expected from it. */
    record Vector(String name, Provider provider, int status, Map<String, List<String>> headers, String body,
            FailureClass expected, Double tokensPerMinute, TokenDimension dimension, Double requestsPerSecond) {
        @Override
        public String toString() {
            return name;
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void statedLimitIsReadAsDocumented(Vector v) {
        Classification c = CLASSIFIER.classify(v.provider(), v.status(), v.headers(), v.body()).orElseThrow();
        assertEquals(v.expected(), c.failureClass(), () -> v.name() + ": " + c);
        assertEquals(v.tokensPerMinute(), c.tokenLimitPerMinute(), () -> v.name() + " tokens: " + c);
        assertEquals(v.dimension(), c.tokenDimension(), () -> v.name() + " dimension: " + c);
        if (v.requestsPerSecond() == null) {
            assertNull(c.requestLimitPerSecond(), () -> v.name() + " requests: " + c);
        } else {
            assertEquals(v.requestsPerSecond(), c.requestLimitPerSecond(), 1e-9, v.name());
        }
        assertEquals(v.provider(), c.provider());
        assertTrue(c.reason().length() <= Classification.MAX_REASON_LENGTH);
    }

    static Stream<Vector> vectors() {
        List<Vector> all = new ArrayList<>();
        all.addAll(openAi());
        all.addAll(azure());
        all.addAll(anthropic());
        all.addAll(gemini());
        all.addAll(bedrock());
        return all.stream();
    }

    static List<Vector> openAi() {
        Provider p = Provider.OPENAI;
        return List.of(
                // https://platform.openai.com/docs/guides/rate-limits#error-mitigation (TPM 429 message) and
                // #rate-limits-in-headers
                v("openAiTpmMessageStatesTheCombinedTokenLimit", p, 429,
                        h("x-ratelimit-limit-requests", "500", "x-ratelimit-remaining-requests", "499",
                                "x-ratelimit-reset-requests", "120ms", "x-ratelimit-limit-tokens", "30000",
                                "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1.4s"), """
                        {"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min \
                        (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s. Visit \
                        https://platform.openai.com/account/rate-limits to learn more.","type":"tokens",\
                        "param":null,"code":"rate_limit_exceeded"}}""", RATE_LIMITED, 30_000.0, TOKENS, null),
                // same guide: a request above the TPM limit can never pass
                v("openAiRequestTooLargeIsRejectedWithTheLimit", p, 429, h(), """
                        {"error":{"message":"Request too large for gpt-4o in organization org-abc on tokens per min \
                        (TPM): Limit 30000, Requested 52344. The input or output tokens must be reduced in order to \
                        run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}""", BAD_REQUEST, 30_000.0, TOKENS,
                        null),
                // the rate-limit message itself with Requested > Limit: never fits either
                v("openAiRateLimitWhoseRequestExceedsTheLimitIsRejected", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on tokens \
                        per min (TPM): Limit 30000, Used 10000, Requested 40000. Please try again in 20s.",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}""", BAD_REQUEST, 30_000.0, TOKENS,
                        null),
                // https://community.openai.com/t/error-code-429-rate-limit-differs-from-documentation/1066011
                v("openAiLargeTpmLimitWithThousandsIsRead", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on tokens per \
                        min (TPM): Limit 100000, Used 99918, Requested 2094. Please try again in 14h29m11.04s.",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}""", RATE_LIMITED, 100_000.0,
                        TOKENS, null),
                // rate-limits guide headers; the body's type "tokens" names the dimension, the header the limit
                v("openAiTokensTypeTakesTheLimitFromTheHeader", p, 429,
                        h("x-ratelimit-limit-tokens", "150000", "x-ratelimit-remaining-tokens", "2000",
                                "x-ratelimit-reset-tokens", "6m0s", "x-ratelimit-remaining-requests", "59"), """
                        {"error":{"message":"Rate limit reached","type":"tokens","param":null,\
                        "code":"rate_limit_exceeded"}}""", RATE_LIMITED, 150_000.0, TOKENS, null),
                // headers only: the tokens limit is the spent one while requests remain
                v("openAiSpentTokenHeaderNamesTheTokenLimit", p, 429,
                        h("x-ratelimit-limit-tokens", "150000", "x-ratelimit-remaining-tokens", "0",
                                "x-ratelimit-remaining-requests", "59", "x-ratelimit-limit-requests", "60",
                                "x-ratelimit-reset-requests", "1s"), """
                        {"error":{"message":"Too many requests","code":"rate_limit_exceeded"}}""",
                        RATE_LIMITED, 150_000.0, TOKENS, null),
                // openai-java's SseException test shape: the dimension without a number
                v("openAiTpmWithoutNumbersNamesTheDimensionOnly", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM)",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}""", RATE_LIMITED, null, TOKENS,
                        null),
                // the RPM message: a request limit, no token limit
                v("openAiRpmMessageStatesARequestLimitOnly", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on requests \
                        per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",\
                        "type":"requests","param":null,"code":"rate_limit_exceeded"}}""", RATE_LIMITED, null, null,
                        500 / 60.0),
                // a per-day token limit is a spent quota, never a per-minute limit
                v("openAiTpdIsQuotaWithoutAPerMinuteLimit", p, 429, h(), """
                        {"error":{"message":"Rate limit reached for gpt-3.5-turbo in organization org-abc on tokens \
                        per day (TPD): Limit 200000, Used 199950, Requested 3000. Please try again in 1h2m3.5s.",\
                        "type":"tokens","param":null,"code":"rate_limit_exceeded"}}""", QUOTA_EXHAUSTED, null, null,
                        null));
    }

    static List<Vector> azure() {
        Provider p = Provider.AZURE_OPENAI;
        return List.of(
                // https://learn.microsoft.com/azure/ai-services/openai/quotas-limits ("exceeded token rate limit")
                v("azureTokenRateLimitNamesTheDimension", p, 429,
                        h("retry-after-ms", "6000", "x-ratelimit-remaining-tokens", "0",
                                "x-ratelimit-remaining-requests", "12"), """
                        {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under \
                        Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 \
                        pricing tier. Please retry after 6 seconds."}}""", RATE_LIMITED, null, TOKENS, null),
                // same, with the limit header some deployments send
                v("azureTokenLimitHeaderIsRead", p, 429,
                        h("x-ratelimit-limit-tokens", "80000", "x-ratelimit-remaining-tokens", "0",
                                "x-ratelimit-remaining-requests", "40"), """
                        {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under \
                        Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 \
                        pricing tier. Please retry after 6 seconds."}}""", RATE_LIMITED, 80_000.0, TOKENS, null),
                // https://learn.microsoft.com/en-us/answers/questions/5625878 : -1 means nothing to report
                v("azureMinusOneHeadersStateNoNumber", p, 429,
                        h("x-ratelimit-limit-tokens", "-1", "x-ratelimit-remaining-tokens", "-1",
                                "x-ratelimit-reset-tokens", "0"), """
                        {"error":{"code":"429","message":"Requests to the Responses_Create Operation have exceeded \
                        token rate limit."}}""", RATE_LIMITED, null, TOKENS, null),
                // "call rate limit": requests, not tokens
                v("azureCallRateLimitIsNoTokenLimit", p, 429, h("retry-after", "59"), """
                        {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under \
                        Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 \
                        pricing tier. Please retry after 59 seconds."}}""", RATE_LIMITED, null, null, null));
    }

    static List<Vector> anthropic() {
        Provider p = Provider.ANTHROPIC;
        return List.of(
                // verbatim in https://github.com/bhouston/mycoder/issues/62 (and OpenHands/OpenHands#9259)
                v("anthropicInputTokensPerMinuteMessageIsRead", p, 429, h("retry-after", "12"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the \
                        rate limit for your organization (d3f27ff7-9afe-4ee2-9645-76ecfc73c2b7) of 40,000 input \
                        tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits. You \
                        can see the response headers for current usage. Please reduce the prompt length or the \
                        maximum tokens requested, or try again later. You may also contact sales at \
                        https://www.anthropic.com/contact-sales to discuss your options for a rate limit \
                        increase."}}""", RATE_LIMITED, 40_000.0, INPUT_TOKENS, null),
                // the 2026 wording, verbatim in https://github.com/logancyang/obsidian-copilot/issues/2327
                v("anthropicOrganizationsRateLimitWordingIsRead", p, 429, h(), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your \
                        organization's rate limit of 30,000 input tokens per minute (org: \
                        5456025a-920d-4fae-83df-eb142ce029c1, model: claude-sonnet-4-20250514). For details, refer \
                        to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current \
                        usage."},"request_id":"req_011CZRtHe9vmeRRMu6G4rMhJ"}""", RATE_LIMITED, 30_000.0,
                        INPUT_TOKENS, null),
                // output tokens, verbatim in https://github.com/bespokelabsai/curator/pull/256
                v("anthropicOutputTokensPerMinuteMessageIsRead", p, 429, h(), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your \
                        organization\u2019s rate limit of 80,000 output tokens per minute. For details, refer to: \
                        https://docs.anthropic.com/en/api/rate-limits; see the response headers for current usage."}}""",
                        RATE_LIMITED, 80_000.0, OUTPUT_TOKENS, null),
                // https://docs.anthropic.com/en/api/rate-limits#response-headers : the spent limit's -limit
                v("anthropicSpentInputTokenHeaderStatesTheLimit", p, 429,
                        h("retry-after", "20", "anthropic-ratelimit-requests-limit", "4000",
                                "anthropic-ratelimit-requests-remaining", "3990",
                                "anthropic-ratelimit-input-tokens-limit", "400000",
                                "anthropic-ratelimit-input-tokens-remaining", "0",
                                "anthropic-ratelimit-input-tokens-reset", "2026-05-28T10:15:50Z",
                                "anthropic-ratelimit-output-tokens-limit", "80000",
                                "anthropic-ratelimit-output-tokens-remaining", "61000"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has \
                        exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the \
                        response headers for current usage."}}""", RATE_LIMITED, 400_000.0, INPUT_TOKENS, null),
                // same page: two spent limits, the later reset decides
                v("anthropicLaterResetAmongSpentTokenLimitsWins", p, 429,
                        h("anthropic-ratelimit-tokens-limit", "480000", "anthropic-ratelimit-tokens-remaining", "0",
                                "anthropic-ratelimit-tokens-reset", "2026-05-28T10:15:45Z",
                                "anthropic-ratelimit-output-tokens-limit", "80000",
                                "anthropic-ratelimit-output-tokens-remaining", "0",
                                "anthropic-ratelimit-output-tokens-reset", "2026-05-28T10:16:10Z"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}""",
                        RATE_LIMITED, 80_000.0, OUTPUT_TOKENS, null),
                // the message names the dimension; the header gives its number
                v("anthropicMessageDimensionWithoutNumberTakesTheHeader", p, 429,
                        h("anthropic-ratelimit-output-tokens-limit", "16000",
                                "anthropic-ratelimit-output-tokens-remaining", "300"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the \
                        rate limit for your organization of 16,000 output tokens per minute."}}""",
                        RATE_LIMITED, 16_000.0, OUTPUT_TOKENS, null),
                // requests spent: a request pace, no token limit
                v("anthropicSpentRequestsStateARequestLimitOnly", p, 429,
                        h("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "0",
                                "anthropic-ratelimit-requests-reset", "2026-05-28T10:15:31Z",
                                "anthropic-ratelimit-input-tokens-remaining", "39000"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has \
                        exceeded your per-minute rate limit"}}""", RATE_LIMITED, null, null, 50 / 60.0));
    }

    static List<Vector> gemini() {
        Provider p = Provider.GEMINI;
        return List.of(
                // verbatim in https://github.com/google-gemini/gemini-cli-action/issues/36
                v("geminiInputTokenQuotaValueIsTheLimit", p, 429, h(), """
                        {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                        billing details. For more information on this error, head to: \
                        https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED","details":[\
                        {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                        "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count","quotaId":\
                        "GenerateContentInputTokensPerModelPerMinute-FreeTier","quotaDimensions":{"location":"global",\
                        "model":"gemini-2.5-pro"},"quotaValue":"250000"}]},{"@type":\
                        "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"40s"}]}}""", RATE_LIMITED, 250_000.0,
                        INPUT_TOKENS, null),
                // the paid tier's id without a quotaValue (https://ai.google.dev/gemini-api/docs/troubleshooting)
                v("geminiInputTokenQuotaWithoutValueNamesTheDimension", p, 429, h(), """
                        {"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED",\
                        "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                        "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count","quotaId":\
                        "GenerateContentPaidTierInputTokensPerModelPerMinute"}]},{"@type":\
                        "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"12s"}]}}""", RATE_LIMITED, null,
                        INPUT_TOKENS, null),
                // per-minute request quota with its value: a request pace of 15 per minute
                v("geminiRequestQuotaValueIsARequestPace", p, 429, h(), """
                        {"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED",\
                        "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                        "generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":\
                        "GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"15"}]}]}}""",
                        RATE_LIMITED, null, null, 0.25),
                // https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 : states nothing
                v("vertexResourceExhaustedStatesNoLimit", p, 429, h(), """
                        {"error":{"code":429,"message":"Resource exhausted. Please try again later. Please refer to \
                        https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.",\
                        "status":"RESOURCE_EXHAUSTED"}}""", RATE_LIMITED, null, null, null));
    }

    static List<Vector> bedrock() {
        Provider p = Provider.BEDROCK;
        return List.of(
                // https://docs.aws.amazon.com/bedrock/latest/userguide/troubleshooting-api-error-codes.html :
                // "Too many tokens" names a token limit without a number
                v("bedrockTooManyTokensNamesTheDimensionOnly", p, 429, h("x-amzn-ErrorType", "ThrottlingException"), """
                        {"message":"Too many tokens, please wait before trying again."}""", RATE_LIMITED, null, TOKENS,
                        null),
                v("bedrockTooManyRequestsStatesNothing", p, 429, h("x-amzn-ErrorType", "ThrottlingException"), """
                        {"message":"Too many requests, please wait before trying again."}""", RATE_LIMITED, null, null,
                        null));
    }

    static Vector v(String name, Provider provider, int status, Map<String, List<String>> headers, String body,
            FailureClass expected, Double tokensPerMinute, TokenDimension dimension, Double requestsPerSecond) {
        return new Vector(name, provider, status, headers, body, expected, tokensPerMinute, dimension, requestsPerSecond);
    }
}
