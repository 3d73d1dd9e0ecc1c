package dev.layover.core.tokens;

import dev.layover.core.provider.Provider;
import java.util.Optional;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.http.SdkHttpResponse;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseResponse;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseStreamMetadataEvent;
import software.amazon.awssdk.services.bedrockruntime.model.InvokeModelResponse;
import software.amazon.awssdk.services.bedrockruntime.model.PayloadPart;

/**
 * Reads usage from the AWS SDK v2 bedrockruntime model types. Only loaded after {@link SdkUsage}
 * has seen a {@code software.amazon.awssdk} object.
 *
 * <p>Converse's {@code TokenUsage} is typed; an InvokeModel body is the model's own JSON, read by
 * {@link UsageJson} (Anthropic models answer in Anthropic's shape), with the token-count headers
 * Bedrock adds to every InvokeModel response as the fallback.
 */
final class BedrockUsage {

    static final String INPUT_HEADER = "X-Amzn-Bedrock-Input-Token-Count";
    static final String OUTPUT_HEADER = "X-Amzn-Bedrock-Output-Token-Count";
    static final String CACHE_READ_HEADER = "X-Amzn-Bedrock-Cache-Read-Input-Token-Count";
    static final String CACHE_WRITE_HEADER = "X-Amzn-Bedrock-Cache-Write-Input-Token-Count";

    private BedrockUsage() {}

    static Optional<TokenUsage> read(Object o) {
        if (o instanceof ConverseResponse r) {
            return of(r.usage());
        }
        if (o instanceof ConverseStreamMetadataEvent e) {
            return of(e.usage());
        }
        if (o instanceof software.amazon.awssdk.services.bedrockruntime.model.TokenUsage u) {
            return of(u);
        }
        if (o instanceof InvokeModelResponse r) {
            Optional<TokenUsage> fromBody = body(r.body());
            return fromBody.isPresent() ? fromBody : headers(r.sdkHttpResponse());
        }
        if (o instanceof PayloadPart p) {
            return body(p.bytes());
        }
        return Optional.empty();
    }

    /** {@code inputTokens} excludes the cache reads and writes. */
    private static Optional<TokenUsage> of(software.amazon.awssdk.services.bedrockruntime.model.TokenUsage u) {
        if (u == null || u.inputTokens() == null && u.outputTokens() == null) {
            return Optional.empty();
        }
        return Optional.of(new TokenUsage(Provider.BEDROCK, orZero(u.inputTokens()), orZero(u.outputTokens()),
                orZero(u.cacheReadInputTokens()), orZero(u.cacheWriteInputTokens())));
    }

    private static Optional<TokenUsage> body(SdkBytes bytes) {
        return bytes == null ? Optional.empty() : UsageJson.read(Provider.BEDROCK, bytes.asUtf8String());
    }

    private static Optional<TokenUsage> headers(SdkHttpResponse http) {
        if (http == null) {
            return Optional.empty();
        }
        Optional<String> in = http.firstMatchingHeader(INPUT_HEADER);
        Optional<String> out = http.firstMatchingHeader(OUTPUT_HEADER);
        if (in.isEmpty() && out.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new TokenUsage(Provider.BEDROCK, header(in), header(out),
                header(http.firstMatchingHeader(CACHE_READ_HEADER)), header(http.firstMatchingHeader(CACHE_WRITE_HEADER))));
    }

    /** A header's count; one that is not a number throws, and so gives no usage. */
    private static long header(Optional<String> value) {
        return value.map(v -> Long.parseLong(v.strip())).orElse(0L);
    }

    private static long orZero(Integer n) {
        return n == null ? 0 : n;
    }
}
