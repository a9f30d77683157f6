# frozen_string_literal: true

module Treasury
  # The gem's version.
  VERSION = "1.2.1"
end
