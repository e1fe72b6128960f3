// Top-level build file: plugin versions only; each module applies what it needs.
plugins {
    id("com.android.application") version "8.7.3" apply false
}
