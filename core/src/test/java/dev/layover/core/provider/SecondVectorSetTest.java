package dev.layover.core.provider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.provider.SecondVectorSet.Vector;
import dev.layover.testing.PureTest;
import java.time.Clock;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The second vector set ({@link SecondVectorSet}) at the (status, headers, body) level, each with the
 * server's provider hint, and the accuracy per server (printed; a vector counts as right when its
 * class, retryAfter and resetAt all are).
 */
@PureTest
class SecondVectorSetTest {

    static final ProviderClassifier CLASSIFIER =
            ProviderClassifier.builder().clock(Clock.fixed(SecondVectorSet.NOW, ZoneOffset.UTC)).build();

    static Stream<Vector> vectors() {
        return SecondVectorSet.all().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void documentedResponseIsReadAsDocumented(Vector v) {
        Classification c = classify(v, hint(v.server()))
                .orElseThrow(() -> new AssertionError(v + ": no classification"));
        assertEquals(v.expected(), c.failureClass(), () -> v + ": " + c);
        assertEquals(v.retryAfter(), c.retryAfter(), () -> v + " retryAfter: " + c);
        assertEquals(v.resetAt(), c.resetAt(), () -> v + " resetAt: " + c);
        assertEquals(v.status(), c.httpStatus());
    }

    /**
     * Accuracy per server with the server named, and as read without the name: with openai-java's
     * own reading ({@code OPENAI} for the compatible servers) and with no hint at all ({@code UNKNOWN}).
     */
    @Test
    void accuracyPerServerIsAtLeastNinetyFivePercent() {
        List<Vector> all = SecondVectorSet.all();
        assertTrue(all.size() >= 80, "at least 80 vectors, was " + all.size());
        Map<String, int[]> byServer = new LinkedHashMap<>();
        int[] total = new int[4];
        for (Vector v : all) {
            int[] n = byServer.computeIfAbsent(v.server(), k -> new int[4]);
            Provider named = hint(v.server());
            Provider sdk = named.isOpenAiCompatible() && named != Provider.AZURE_OPENAI ? Provider.OPENAI : named;
            int[] right = {isRight(v, classify(v, named)) ? 1 : 0, isRight(v, classify(v, sdk)) ? 1 : 0,
                    isRight(v, classify(v, Provider.UNKNOWN)) ? 1 : 0};
            for (int i = 0; i < 3; i++) {
                n[i] += right[i];
                total[i] += right[i];
            }
            n[3]++;
            total[3]++;
        }
        StringBuilder report = new StringBuilder(
                "second vector set, right / vectors: server named | as OPENAI (openai-java) | no hint\n");
        byServer.forEach((server, n) -> report.append(line(server, n)));
        report.append(line("all", total));
        System.out.print(report);
        assertTrue(total[0] >= 0.95 * all.size(), report::toString);
        assertTrue(total[1] >= 0.9 * all.size(), report::toString);
    }

    private static String line(String server, int[] n) {
        return String.format(Locale.ROOT, "  %-11s %3d / %3d = %5.1f %% | %5.1f %% | %5.1f %%%n", server, n[0], n[3],
                100.0 * n[0] / n[3], 100.0 * n[1] / n[3], 100.0 * n[2] / n[3]);
    }

    static Optional<Classification> classify(Vector v, Provider hint) {
        return CLASSIFIER.classify(hint, v.status(), v.headers(), v.body());
    }

    static boolean isRight(Vector v, Optional<Classification> found) {
        return found.map(c -> c.failureClass() == v.expected() && java.util.Objects.equals(c.retryAfter(),
                v.retryAfter()) && java.util.Objects.equals(c.resetAt(), v.resetAt())).orElse(false);
    }

    /** The provider a user names for the server; OpenAI (openai-java's own reading) where none is known. */
    static Provider hint(String server) {
        String name = switch (server) {
            case "azure" -> "AZURE_OPENAI";
            case "gateway" -> "UNKNOWN";
            default -> server.toUpperCase(Locale.ROOT);
        };
        return Arrays.stream(Provider.values()).filter(p -> p.name().equals(name)).findFirst().orElse(Provider.OPENAI);
    }
}
