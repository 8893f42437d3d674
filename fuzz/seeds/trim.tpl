a {{- 3 -}} b {{-3}} {{ `raw
str` }} {{ '\n' }} {{ block "b" . }}B{{ end }}