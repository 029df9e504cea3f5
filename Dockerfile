# One image for every Roster process; the compose file picks the command.
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json turbo.json tsconfig.base.json prisma.config.ts ./
COPY prisma ./prisma
COPY scripts ./scripts
COPY packages ./packages
COPY apps ./apps
COPY deploy ./deploy
RUN npm ci --no-audit --no-fund && npm run build
ENV NODE_ENV=production HOST=0.0.0.0
EXPOSE 3000 3100
CMD ["node", "--no-allocation-site-pretenuring", "apps/api/dist/main.js"]
