# frozen_string_literal: true

# The whole suite, one command, from clients/ruby:  ruby test/run.rb
# (TREASURY_BASE_URL and TREASURY_OPERATOR_KEY must name a running `treasury serve`.)
Dir[File.join(__dir__, "**", "*_test.rb")].sort.each { |file| require file }
