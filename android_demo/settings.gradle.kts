// albert-edge Android demo: the app plus albert-core, the pure-Java tokenizer / pack reader that the
// JVM tests (ci-check.sh) verify against golden files written by the Python package.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}

dependencyResolutionManagement {
    repositoriesMode.set(RepositoriesMode.FAIL_ON_PROJECT_REPOS)
    repositories {
        google()
        mavenCentral()
    }
}

rootProject.name = "albert-edge-demo"
include(":app", ":albert-core")
