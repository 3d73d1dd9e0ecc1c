package dev.layover.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.layover.testing.PureTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The boundaries between Layover's modules and packages, enforced over the compiled main classes
 * (docs/architecture.md draws them):
 *
 * <ul>
 *   <li>{@code dev.layover.core.internal..} is core's alone: no other module reaches it;
 *   <li>{@code dev.layover.core.spi} is for Layover's own modules (dead letters, console) only;
 *   <li>core's internal packages depend on each other one way (engine → gate → jobs → db), without
 *       cycles; core's public subpackages have no cycles among themselves either;
 *   <li>modules depend one way: console → dead letters → core.
 * </ul>
 */
@PureTest
class BoundariesTest {

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.layover");
    }

    @Test
    void nothingOutsideCoreReachesCoresInternals() {
        noClasses().that().resideOutsideOfPackage("dev.layover.core..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.core.internal..")
                .because("what dlq and the console need from core goes through dev.layover.core.spi")
                .check(classes);
    }

    @Test
    void theSpiIsForLayoversOwnModulesOnly() {
        noClasses().that().resideOutsideOfPackages("dev.layover.core..", "dev.layover.dlq..", "dev.layover.console..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.core.spi..")
                .because("applications use core's API; the SPI may change with any release")
                .check(classes);
    }

    @Test
    void coresInternalPackagesHaveNoCycles() {
        slices().matching("dev.layover.core.internal.(*)..").should().beFreeOfCycles().check(classes);
    }

    @Test
    void coresInternalPackagesDependOneWay() {
        noClasses().that().resideInAnyPackage("dev.layover.core.internal.jobs..", "dev.layover.core.internal.db..",
                        "dev.layover.core.internal.time..", "dev.layover.core.internal.observe..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.layover.core.internal.engine..",
                        "dev.layover.core.internal.gate..")
                .because("the job store, the database and observability are below the engine and the gate")
                .check(classes);
        noClasses().that().resideInAPackage("dev.layover.core.internal.gate..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.core.internal.engine..")
                .because("the engine asks the gate, never the other way round")
                .check(classes);
        noClasses().that().resideInAPackage("dev.layover.core.internal.batch..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.layover.core.internal.engine..",
                        "dev.layover.core.internal.gate..")
                .because("the engine routes jobs to batches; the batch store and loop know neither the engine nor the gate")
                .check(classes);
    }

    @Test
    void thePublicSubpackagesHaveNoCyclesAmongThemselves() {
        slices().matching("dev.layover.core.(**)")
                .should().beFreeOfCycles()
                .check(classes.that(JavaClass.Predicates.resideInAPackage("dev.layover.core.*..")
                        .and(JavaClass.Predicates.resideOutsideOfPackage("dev.layover.core.internal.."))));
    }

    @Test
    void theDeadLetterStoreAndTheConsoleDependOnCoreOneWay() {
        noClasses().that().resideInAPackage("dev.layover.core..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.layover.dlq..", "dev.layover.console..")
                .check(classes);
        noClasses().that().resideInAPackage("dev.layover.dlq..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.console..")
                .check(classes);
    }
}
