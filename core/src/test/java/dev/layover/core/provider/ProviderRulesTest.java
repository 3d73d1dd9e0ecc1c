package dev.layover.core.provider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.provider.ProviderRules.InvalidRulesException;
import dev.layover.testing.PureTest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rule table: the built-in one, an application's rows for its own gateway, and bad rows. */
@PureTest
class ProviderRulesTest {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");
    static final String V = ProviderRules.VERSION_LINE + "\n";

    static ProviderClassifier classifier(ProviderRules rules) {
        return ProviderClassifier.builder().clock(Clock.fixed(NOW, ZoneOffset.UTC)).rules(rules).build();
    }

    static Classification classify(ProviderClassifier c, Provider p, int status, Map<String, List<String>> headers,
            String body) {
        return c.classify(p, status, headers, body).orElseThrow();
    }

    @Test
    void theBuiltInTableIsTheShippedResource() {
        ProviderRules b = ProviderRules.builtIn();
        assertSame(b, ProviderRules.builtIn(), "read once");
        assertEquals(ProviderRules.RESOURCE, b.source());
        assertTrue(b.size() > 40, b.toString());
        assertTrue(ProviderRules.class.getResource(ProviderRules.RESOURCE) != null);
        assertEquals(0, ProviderRules.empty().size());
        assertEquals(ProviderRules.empty(), ProviderClassifier.defaults().rules());
    }

    @Test
    void anApplicationRowWinsOverTheBuiltInOnes() {
        // a gateway that says "monthly quota" under a 429 with a reset header of its own
        ProviderRules gateway = ProviderRules.parse("gateway.tsv", V + """
                # our gateway's monthly allowance
                match	*	429	message~monthly allowance used	QUOTA_EXHAUSTED
                wait	*	x-gw-retry-at	rfc3339
                """);
        String body = "{\"error\":{\"message\":\"Monthly allowance used up\",\"type\":\"rate_limit_error\"}}";
        Map<String, List<String>> headers = Map.of("x-gw-retry-at", List.of("2026-06-01T00:00:00Z"));

        Classification before = classify(classifier(ProviderRules.empty()), Provider.UNKNOWN, 429, headers, body);
        assertEquals(FailureClass.RATE_LIMITED, before.failureClass(), "the built-in table reads a rate limit");
        assertNull(before.retryAfter(), "and knows no x-gw-retry-at");

        Classification after = classify(classifier(gateway), Provider.UNKNOWN, 429, headers, body);
        assertEquals(FailureClass.QUOTA_EXHAUSTED, after.failureClass());
        assertEquals(Instant.parse("2026-06-01T00:00:00Z"), after.resetAt(), "the wait row's reset");
        assertEquals(Duration.between(NOW, Instant.parse("2026-06-01T00:00:00Z")), after.retryAfter());
    }

    @Test
    void anApplicationRowMayUseTheBuiltInListsAndScopeToAProvider() {
        ProviderRules rows = ProviderRules.parse("scoped", V + """
                set	ours	gateway_busy|pool_drained
                match	VLLM	503	token=@ours	RATE_LIMITED
                match	*	*	token=@rate & message~try tomorrow	QUOTA_EXHAUSTED	utc-midnight
                """);
        ProviderClassifier c = classifier(rows);
        String busy = "{\"error\":{\"message\":\"pool drained\",\"type\":\"pool_drained\",\"code\":503}}";
        assertEquals(FailureClass.RATE_LIMITED, classify(c, Provider.VLLM, 503, Map.of(), busy).failureClass());
        assertEquals(FailureClass.OVERLOADED, classify(c, Provider.OLLAMA, 503, Map.of(), busy).failureClass(),
                "another server's 503 keeps the built-in reading");
        Classification daily = classify(c, Provider.UNKNOWN, 429, Map.of(),
                "{\"error\":{\"message\":\"Limit hit, try tomorrow\",\"code\":\"rate_limit_exceeded\"}}");
        assertEquals(FailureClass.QUOTA_EXHAUSTED, daily.failureClass());
        assertEquals(Instant.parse("2026-05-29T00:00:00Z"), daily.resetAt());
    }

    @Test
    void aDetectRowNamesTheServerBehindAGateway() {
        ProviderRules rows = ProviderRules.parse("detect", V + "detect\tTOGETHER\theader:x-upstream=together\n");
        // Together documents its 403 as a too-long input: read so only for Together
        String body = "{\"error\":{\"message\":\"Forbidden\",\"type\":\"invalid_request_error\"}}";
        Map<String, List<String>> headers = Map.of("X-Upstream", List.of("Together"));
        Classification c = classify(classifier(rows), Provider.OPENAI, 403, headers, body);
        assertEquals(Provider.TOGETHER, c.provider());
        assertEquals(FailureClass.BAD_REQUEST, c.failureClass());
        Classification plain = classify(classifier(ProviderRules.empty()), Provider.OPENAI, 403, headers, body);
        assertEquals(Provider.OPENAI, plain.provider());
        assertEquals(FailureClass.AUTH_REFUSED, plain.failureClass(), "OpenAI's 403 is a refused key");
        Classification named = classify(classifier(rows), Provider.AZURE_OPENAI, 403, headers, body);
        assertEquals(Provider.AZURE_OPENAI, named.provider(), "a hint other than OPENAI is kept");
    }

    @Test
    void rulesAddedTwiceAreTriedInOrder() {
        ProviderRules first = ProviderRules.parse("first", V + "match\t*\t418\t-\tRATE_LIMITED\n");
        ProviderRules second = ProviderRules.parse("second", V + "match\t*\t418\t-\tOVERLOADED\n");
        ProviderClassifier c = ProviderClassifier.builder().rules(first).rules(second).build();
        assertEquals(FailureClass.RATE_LIMITED, classify(c, Provider.UNKNOWN, 418, Map.of(), null).failureClass());
        assertEquals("first + second", c.rules().source());
        assertEquals(2, c.rules().size());
    }

    @Test
    void aTableIsReadFromAFile(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("rules.tsv");
        Files.writeString(file, V + "match\t*\t418\t-\tOVERLOADED\n", StandardCharsets.UTF_8);
        ProviderRules rules = ProviderRules.load(file);
        assertEquals(file.toString(), rules.source());
        assertEquals(FailureClass.OVERLOADED,
                classify(classifier(rules), Provider.UNKNOWN, 418, Map.of(), null).failureClass());
    }

    @Test
    void everyBadRowIsRefusedNamingItsLine() {
        assertBad("", 1, "starts with the line '#! layover-provider-rules 1'");
        assertBad("#! layover-provider-rules 2\n", 1, "the format version this Layover reads");
        assertBad(V + "\nmatch * 429 - RATE_LIMITED\n", 3, "unknown row kind 'match * 429 - RATE_LIMITED'");
        assertBad(V + "match\t*\t429\t-\n", 2, "4 or 5 columns");
        assertBad(V + "match\tOPENAII\t429\t-\tRATE_LIMITED\n", 2, "unknown provider 'OPENAII'");
        assertBad(V + "match\t*\t4xx\t-\tRATE_LIMITED\n", 2, "'4xx' is not a status");
        assertBad(V + "match\t*\t599-500\t-\tRATE_LIMITED\n", 2, "not within 0-999");
        assertBad(V + "match\t*\t429\t-\tRATE_LIMIT\n", 2, "unknown class 'RATE_LIMIT'");
        assertBad(V + "match\t*\t429\t-\tRATE_LIMITED\tpacific-midnight\n", 2, "QUOTA_EXHAUSTED rows only");
        assertBad(V + "match\t*\t429\t-\tQUOTA_EXHAUSTED\tsoon\n", 2, "unknown reset 'soon'");
        assertBad(V + "match\t*\t429\tmessage=quota\tQUOTA_EXHAUSTED\n", 2, "'message' is compared with '~'");
        assertBad(V + "match\t*\t429\ttoken~quota\tQUOTA_EXHAUSTED\n", 2, "'token' is compared with '='");
        assertBad(V + "match\t*\t429\tbody~quota\tQUOTA_EXHAUSTED\n", 2, "unknown field 'body'");
        assertBad(V + "match\t*\t429\ttoken=@nope\tQUOTA_EXHAUSTED\n", 2, "unknown set '@nope'");
        assertBad(V + "match\t*\t429\ttoken=a||b\tQUOTA_EXHAUSTED\n", 2, "an empty value");
        assertBad(V + "match\t*\t429\ttoken=a & \tQUOTA_EXHAUSTED\n", 2, "an empty condition");
        assertBad(V + "match\t*\t429\tquota\tQUOTA_EXHAUSTED\n", 2, "a condition is FIELD=VALUES");
        assertBad(V + "set\tRate\ta|b\n", 2, "a set name is lower-case");
        assertBad(V + "set\tx\ta\nset\tx\tb\n", 3, "set 'x' is defined twice");
        assertBad(V + "detect\t*\theader:x-a\n", 2, "a detect row names one provider");
        assertBad(V + "detect\tGROQ\t-\n", 2, "a detect row needs a condition");
        assertBad(V + "wait\t*\tx-reset\tfortnights\n", 2, "unknown wait form 'fortnights'");
        assertBad(V + "wait\t*\tx reset\tseconds\n", 2, "'x reset' is not a header name");
    }

    @Test
    void commentsBlankLinesAndCarriageReturnsAreAllowed() {
        ProviderRules rules = ProviderRules.parse("crlf", "\r\n" + ProviderRules.VERSION_LINE
                + "\r\n# a comment\r\n\r\n  # an indented comment\r\nmatch\t*\t418\t-\tOVERLOADED\r\n");
        assertEquals(1, rules.size());
    }

    private static void assertBad(String text, int line, String says) {
        InvalidRulesException e = assertThrows(InvalidRulesException.class, () -> ProviderRules.parse("t.tsv", text));
        assertEquals("t.tsv", e.source());
        assertEquals(line, e.line(), e.getMessage());
        assertTrue(e.getMessage().startsWith("t.tsv line " + line + ": "), e.getMessage());
        assertTrue(e.getMessage().contains(says), e.getMessage());
    }
}
